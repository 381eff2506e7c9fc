/**
 * What the live view remembers besides the registry's present state: the
 * last ended sessions, each board's last failure, and a per-key series of
 * queue depth and board utilisation sampled every second.
 *
 * Fed from the farm events; `sample()` is called by the feed's timer. All of
 * it is bounded: `maxSessions` sessions, `maxSamples` samples, one issue per
 * attached board.
 */
import type { FarmEvent } from "../events.ts";
import { boardState, type Registry } from "../registry.ts";
import type { Scheduler } from "../scheduler.ts";
import type { BoardIssue, EndedSession, KeySample, SeriesSample } from "./protocol.ts";

export interface HistoryLimits {
  maxSessions: number;
  maxSamples: number;
}

/** Busy boards of one key, integrated over the current interval. */
interface BusyMeter {
  now: number;
  since: number;
  integral: number;
  peakPending: number;
}

export class LiveHistory {
  /** Newest last (a ring would save little at 100 entries). */
  private readonly ended: EndedSession[] = [];
  private readonly issues = new Map<string, BoardIssue>();
  private readonly samples: SeriesSample[] = [];
  private readonly meters = new Map<string, BusyMeter>();
  private intervalStart = Date.now();

  constructor(
    private readonly registry: Registry,
    private readonly scheduler: Scheduler,
    private readonly limits: HistoryLimits,
  ) {}

  record(event: FarmEvent): void {
    switch (event.type) {
      case "session": {
        // A meter made now counts this session already (the registry has changed).
        const [m, fresh] = this.meter(event.key, event.at);
        this.integrate(m, event.at);
        if (!fresh) m.now = Math.max(0, m.now + (event.change === "granted" ? 1 : -1));
        if (event.change === "granted") return;
        const ended: EndedSession = {
          session: event.session,
          board: event.board,
          key: event.key,
          client: event.client,
          reason: event.reason ?? "OK",
          endedAt: event.at,
          durationMs: event.durationMs ?? 0,
        };
        if (event.message) ended.message = event.message;
        if (event.bytesToBoard !== undefined) ended.bytesToBoard = event.bytesToBoard;
        if (event.bytesFromBoard !== undefined) ended.bytesFromBoard = event.bytesFromBoard;
        if (event.lane) ended.lane = event.lane;
        this.ended.push(ended);
        if (this.ended.length > this.limits.maxSessions) this.ended.splice(0, this.ended.length - this.limits.maxSessions);
        if (ended.reason !== "OK") this.issues.set(event.board, { reason: ended.reason, message: event.message, at: event.at, session: event.session });
        return;
      }
      case "board":
        if (event.change === "removed") this.issues.delete(event.board.id ?? "");
        return;
      case "queue": {
        const [m] = this.meter(event.key, event.at);
        m.peakPending = Math.max(m.peakPending, event.pending);
        return;
      }
      default:
        return;
    }
  }

  /** Closes the current interval: appends and returns its sample. */
  sample(now = Date.now()): SeriesSample {
    const span = Math.max(1, now - this.intervalStart);
    const keys: Record<string, KeySample> = {};
    const totals = new Map<string, { total: number; busy: number }>();
    for (const board of this.registry.boards()) {
      const t = totals.get(board.key) ?? { total: 0, busy: 0 };
      t.total++;
      if (boardState(board) === "busy") t.busy++;
      totals.set(board.key, t);
    }
    for (const key of new Set([...totals.keys(), ...this.scheduler.queuedKeys(), ...this.meters.keys()])) {
      const t = totals.get(key) ?? { total: 0, busy: 0 };
      const pending = this.scheduler.pendingOf(key);
      const m = this.meters.get(key);
      if (m) this.integrate(m, now);
      const busy = m ? Math.min(t.total, Math.round((m.integral / span) * 100) / 100) : t.busy;
      if (t.total > 0 || pending > 0 || busy > 0) keys[key] = { pending, peakPending: Math.max(m?.peakPending ?? 0, pending), busy, total: t.total };
      // The next interval starts from the registry's truth, not from what the events added up to.
      if (t.total > 0 || pending > 0) this.meters.set(key, { now: t.busy, since: now, integral: 0, peakPending: pending });
      else this.meters.delete(key);
    }
    this.intervalStart = now;
    const sample = { at: now, keys };
    this.samples.push(sample);
    if (this.samples.length > this.limits.maxSamples) this.samples.splice(0, this.samples.length - this.limits.maxSamples);
    return sample;
  }

  /** Ended sessions, newest first. */
  sessions(): EndedSession[] {
    return [...this.ended].reverse();
  }

  boardIssues(): Record<string, BoardIssue> {
    const out: Record<string, BoardIssue> = {};
    for (const [id, issue] of this.issues) out[id] = issue.message === undefined ? { reason: issue.reason, at: issue.at, session: issue.session } : issue;
    return out;
  }

  series(): SeriesSample[] {
    return [...this.samples];
  }

  private meter(key: string, at: number): [BusyMeter, boolean] {
    const m = this.meters.get(key);
    if (m) return [m, false];
    const made = { now: this.registry.boardsOfKey(key).filter((b) => b.lease).length, since: Math.max(this.intervalStart, at), integral: 0, peakPending: 0 };
    this.meters.set(key, made);
    return [made, true];
  }

  private integrate(m: BusyMeter, at: number): void {
    if (at > m.since) {
      m.integral += m.now * (at - m.since);
      m.since = at;
    }
  }
}
