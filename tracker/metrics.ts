/**
 * The tracker's Prometheus metrics, served as `GET /metrics` on its HTTP side
 * (`--metrics-port`). docs/metrics.md lists every metric.
 *
 * Two sources:
 * * **the registry, read at scrape time** (`collect()` callbacks): boards by
 *   key/kind/state, agents, queue lengths, per-board info and state. These are
 *   always exact, whatever events a listener may have missed.
 * * **farm events** (tracker/events.ts): counters and histograms of what
 *   happened — sessions started and ended, queue waits, session durations,
 *   session bytes (counted when a session ends), agents attached and lost,
 *   heartbeats missed.
 *
 * Session bytes come from the tracker's own count on the relay and grpc
 * lanes, and from the session's worker on the direct lane, which the
 * tracker does not carry (tracker/lane-bytes.ts): `kernelfarm_relay_bytes_total`
 * stays the tracker's own, `kernelfarm_session_bytes_total` has every lane,
 * and `kernelfarm_board_bytes_total` each board's, its running session's
 * included (read at scrape time).
 *
 * Labels are bounded: key, kind, state, reason (a FarmError code or "OK"),
 * direction, lane; board ids only on the per-board series, whose count is the
 * number of boards attached. Never session or client ids.
 *
 * The registry is this tracker's own prom-client `Registry`, never the global
 * one: two trackers in one process (tests) keep separate figures.
 */
import { Counter, Gauge, Histogram, Registry as PromRegistry, collectDefaultMetrics } from "prom-client";
import type { FarmEvent, FarmEvents } from "./events.ts";
import { HEALTH_STATES } from "./health.ts";
import type { TrackerHttp } from "./http-server.ts";
import { boardState, type Board, type BoardState, type Registry } from "./registry.ts";
import type { Scheduler } from "./scheduler.ts";
import { boardBytes } from "./lane-bytes.ts";
import { LANES } from "../protos/index.ts";
import type { TvmPort } from "./tvm/port.ts";

/** What the metrics read: a Tracker passes itself. */
export interface MetricsSources {
  readonly registry: Pick<Registry, "boards" | "agents">;
  readonly scheduler: Pick<Scheduler, "pendingOf" | "queuedKeys">;
  readonly events: FarmEvents;
  /** The TVM port (tracker/tvm/), when the tracker has one. */
  readonly tvm?: Pick<TvmPort, "connectionCount" | "refusals">;
}

export interface MetricsOptions {
  /** Node process metrics (`kernelfarm_tracker_process_*`, `kernelfarm_tracker_nodejs_*`); default true. */
  processMetrics?: boolean;
}

/** Queue waits: from a free board (ms) to the request's deadline (default 60 s) and beyond. */
export const QUEUE_WAIT_BUCKETS_S = [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
/** Session durations: a one-call session (ms) to an auto-tuning run (hours). */
export const SESSION_DURATION_BUCKETS_S = [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 1800, 3600, 4 * 3600];
/**
 * Board states always reported per key and kind (0 when none), so a state's
 * series never vanishes. Every BoardState must be listed: a new state fails
 * to compile here until it is.
 */
export const REPORTED_BOARD_STATES = Object.keys({
  starting: true,
  free: true,
  busy: true,
  draining: true,
  quarantined: true,
} satisfies Record<BoardState, true>) as readonly BoardState[];
/** The process metrics' name prefix. */
export const PROCESS_METRICS_PREFIX = "kernelfarm_tracker_";

/** One board as the per-board gauges see it. */
export interface BoardRow {
  board: string;
  key: string;
  kind: string;
  agent: string;
  state: BoardState;
}

export function boardRow(board: Board): BoardRow {
  return { board: board.id, key: board.key, kind: board.kind, agent: board.agent.name, state: boardState(board) };
}

/**
 * Boards counted by key, kind and state: every state of `states` appears for
 * each key/kind that has a board (0 when none is in it), plus any other state
 * a board is in. Keys are `key\0kind\0state`.
 */
export function countBoards(rows: Iterable<BoardRow>, states: Iterable<string>): Map<string, { key: string; kind: string; state: string; count: number }> {
  const out = new Map<string, { key: string; kind: string; state: string; count: number }>();
  const slot = (key: string, kind: string, state: string) => {
    const id = `${key}\0${kind}\0${state}`;
    let s = out.get(id);
    if (!s) out.set(id, (s = { key, kind, state, count: 0 }));
    return s;
  };
  const all = [...states];
  for (const r of rows) {
    for (const state of all) slot(r.key, r.kind, state);
    slot(r.key, r.kind, r.state).count++;
  }
  return out;
}

/** Keys no board serves whose queue gauge stays reported: a bound, since TVM's clients may name any key and wait for it. */
export const MAX_UNSERVED_KEYS = 1024;

export class TrackerMetrics {
  readonly register = new PromRegistry();
  private readonly unsubscribe: () => void;
  /** Keys that had a board or a queue: their pending gauge stays reported (0) once empty (keys no board serves: the last MAX_UNSERVED_KEYS). */
  private readonly keysSeen = new Set<string>();

  private readonly sessionsStarted: Counter<"key">;
  private readonly sessionsEnded: Counter<"key" | "reason" | "lane">;
  private readonly queueWait: Histogram<"key">;
  private readonly sessionDuration: Histogram<"key">;
  private readonly relayBytes: Counter<"direction">;
  private readonly sessionBytes: Counter<"direction" | "lane">;
  private readonly agentAttaches: Counter;
  private readonly agentLosses: Counter;
  private readonly heartbeatMisses: Counter;
  private readonly healthTransitions: Counter<"to">;

  constructor(
    private readonly sources: MetricsSources,
    opts: MetricsOptions = {},
  ) {
    const registers = [this.register];
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- prom-client calls collect() with the metric as `this`
    const metrics = this;

    // ── From the registry, at scrape time ──────────────────────────────────
    new Gauge({
      name: "kernelfarm_boards",
      help: "Boards attached, by key, kind and state (starting, free, busy, draining, quarantined).",
      labelNames: ["key", "kind", "state"] as const,
      registers,
      collect() {
        this.reset();
        for (const c of countBoards(metrics.rows(), REPORTED_BOARD_STATES).values()) this.set({ key: c.key, kind: c.kind, state: c.state }, c.count);
      },
    });
    new Gauge({
      name: "kernelfarm_agents",
      help: "Agents attached.",
      registers,
      collect() {
        this.set(metrics.sources.registry.agents.size);
      },
    });
    new Gauge({
      name: "kernelfarm_queue_pending",
      help: "Session requests waiting for a board, by key.",
      labelNames: ["key"] as const,
      registers,
      collect() {
        this.reset();
        const { scheduler, registry } = metrics.sources;
        const served = new Set<string>();
        for (const board of registry.boards()) served.add(board.key);
        for (const key of served) metrics.keysSeen.add(key);
        for (const key of scheduler.queuedKeys()) metrics.keysSeen.add(key);
        // Keys no board serves (a TVM client may name any) are kept up to MAX_UNSERVED_KEYS, the oldest idle ones forgotten first.
        let over = metrics.keysSeen.size - served.size - MAX_UNSERVED_KEYS;
        for (const key of metrics.keysSeen) {
          if (over <= 0) break;
          if (served.has(key) || scheduler.pendingOf(key) > 0) continue;
          metrics.keysSeen.delete(key);
          over--;
        }
        for (const key of metrics.keysSeen) this.set({ key }, scheduler.pendingOf(key));
      },
    });
    new Gauge({
      name: "kernelfarm_board_info",
      help: "1 per attached board, with its key, kind and agent (join on `board`).",
      labelNames: ["board", "key", "kind", "agent"] as const,
      registers,
      collect() {
        this.reset();
        for (const r of metrics.rows()) this.set({ board: r.board, key: r.key, kind: r.kind, agent: r.agent }, 1);
      },
    });
    new Gauge({
      name: "kernelfarm_board_state",
      help: "Per board: 1 for the state it is in, 0 for the other states.",
      labelNames: ["board", "state"] as const,
      registers,
      collect() {
        this.reset();
        for (const r of metrics.rows()) for (const state of REPORTED_BOARD_STATES) this.set({ board: r.board, state }, state === r.state ? 1 : 0);
      },
    });
    new Gauge({
      name: "kernelfarm_board_health",
      help: "Per board: 1 for its health state (tracker/health.ts), 0 for the others.",
      labelNames: ["board", "health"] as const,
      registers,
      collect() {
        this.reset();
        for (const b of sources.registry.boards()) for (const h of HEALTH_STATES) this.set({ board: b.id, health: h }, h === b.health.state ? 1 : 0);
      },
    });
    new Counter({
      name: "kernelfarm_board_bytes_total",
      help: "Per board: bytes its sessions' lanes carried since it attached, to_board (host → board) or from_board, its running session's so far included (direct lanes: as their workers reported them, about once a second).",
      labelNames: ["board", "direction"] as const,
      registers,
      collect() {
        this.reset();
        for (const b of sources.registry.boards()) {
          const { toBoard, fromBoard } = boardBytes(b);
          this.inc({ board: b.id, direction: "to_board" }, toBoard);
          this.inc({ board: b.id, direction: "from_board" }, fromBoard);
        }
      },
    });
    // Canary drift (tracker/canary-drift.ts): one series each per board from its attach on, 0 until known, so an alert's expression never misses a board.
    const canaryGauges: [name: string, help: string, value: (b: Board) => number][] = [
      [
        "kernelfarm_board_canary_seconds",
        "Per board: its canary kernel's recent time per run (the median of its last timed canaries); 0 before the first.",
        (b) => b.health.canary.recentNs / 1e9,
      ],
      [
        "kernelfarm_board_canary_baseline_seconds",
        "Per board: its canary's baseline time per run (the median of its first timed canaries since it attached or was restored); 0 while learned.",
        (b) => b.health.canary.baselineNs / 1e9,
      ],
      [
        "kernelfarm_board_canary_drift",
        "Per board: recent canary time / baseline (1.42: 42 % slower; beyond --max-canary-drift the board is suspect); 0 while the baseline is learned.",
        (b) => b.health.canary.ratio,
      ],
    ];
    for (const [name, help, value] of canaryGauges) {
      new Gauge({
        name,
        help,
        labelNames: ["board"] as const,
        registers,
        collect() {
          this.reset();
          for (const b of sources.registry.boards()) this.set({ board: b.id }, value(b));
        },
      });
    }

    const tvm = sources.tvm;
    if (tvm) {
      new Gauge({
        name: "kernelfarm_tvm_connections",
        help: "Connections open on the TVM port (TVM servers, clients and status queries).",
        registers,
        collect() {
          this.set(tvm.connectionCount);
        },
      });
      new Counter({
        name: "kernelfarm_tvm_refused_total",
        help: "TVM-port peers and requests refused, by reason: network (not in --tvm-allow), key (not in --tvm-keys), address (a PUT naming an address other than its own), protocol (a wrong magic, frame length or nesting), overload (too many connections).",
        labelNames: ["reason"] as const,
        registers,
        collect() {
          this.reset();
          for (const [reason, n] of Object.entries(tvm.refusals())) this.inc({ reason }, n);
        },
      });
    }

    // ── From farm events ───────────────────────────────────────────────────
    this.sessionsStarted = new Counter({
      name: "kernelfarm_sessions_started_total",
      help: "Sessions granted, by key.",
      labelNames: ["key"] as const,
      registers,
    });
    this.sessionsEnded = new Counter({
      name: "kernelfarm_sessions_ended_total",
      help: 'Sessions ended, by key, reason ("OK" for a clean close, else the FarmError code) and lane (direct, relay, grpc; "none" when it never opened one).',
      labelNames: ["key", "reason", "lane"] as const,
      registers,
    });
    this.queueWait = new Histogram({
      name: "kernelfarm_queue_wait_seconds",
      help: "Time granted requests waited in the queue, by key (requests that failed or gave up are not in it).",
      labelNames: ["key"] as const,
      buckets: QUEUE_WAIT_BUCKETS_S,
      registers,
    });
    this.sessionDuration = new Histogram({
      name: "kernelfarm_session_duration_seconds",
      help: "Session lifetimes from grant to end, by key.",
      labelNames: ["key"] as const,
      buckets: SESSION_DURATION_BUCKETS_S,
      registers,
    });
    this.relayBytes = new Counter({
      name: "kernelfarm_relay_bytes_total",
      help: "Session bytes relayed, to_board (host → board) or from_board; counted when each session ends.",
      labelNames: ["direction"] as const,
      registers,
    });
    this.sessionBytes = new Counter({
      name: "kernelfarm_session_bytes_total",
      help: "Session bytes, to_board (host → board) or from_board, by lane: relay and grpc as the tracker carried them, direct as each session's worker reported them; counted when each session ends.",
      labelNames: ["direction", "lane"] as const,
      registers,
    });
    this.agentAttaches = new Counter({ name: "kernelfarm_agent_attaches_total", help: "Agents that registered (re-attaches included).", registers });
    this.agentLosses = new Counter({
      name: "kernelfarm_agent_losses_total",
      help: "Agents lost: disconnected, detached, missed heartbeats or replaced.",
      registers,
    });
    this.healthTransitions = new Counter({
      name: "kernelfarm_health_transitions_total",
      help: "Board health transitions, by the state moved to (canaries, infrastructure errors, operators).",
      labelNames: ["to"] as const,
      registers,
    });
    for (const h of HEALTH_STATES) this.healthTransitions.inc({ to: h }, 0);
    this.heartbeatMisses = new Counter({
      name: "kernelfarm_heartbeat_misses_total",
      help: "Heartbeat intervals agents stayed silent beyond the first (one per interval).",
      registers,
    });
    // Both directions exist from the start: rate() needs a series before the first session ends.
    this.relayBytes.inc({ direction: "to_board" }, 0);
    this.relayBytes.inc({ direction: "from_board" }, 0);
    for (const lane of LANES) for (const direction of ["to_board", "from_board"]) this.sessionBytes.inc({ direction, lane }, 0);

    if (opts.processMetrics ?? true) collectDefaultMetrics({ register: this.register, prefix: PROCESS_METRICS_PREFIX });
    this.unsubscribe = sources.events.subscribe((e) => this.onEvent(e));
  }

  /** The exposition text, as `/metrics` serves it. */
  scrape(): Promise<string> {
    return this.register.metrics();
  }

  get contentType(): string {
    return this.register.contentType;
  }

  /** Stops counting events (the scrape-time gauges keep reading the registry). */
  close(): void {
    this.unsubscribe();
  }

  private *rows(): Iterable<BoardRow> {
    for (const board of this.sources.registry.boards()) yield boardRow(board);
  }

  private onEvent(e: FarmEvent): void {
    switch (e.type) {
      case "session":
        this.keysSeen.add(e.key);
        if (e.change === "granted") {
          this.sessionsStarted.inc({ key: e.key });
          if (e.queuedMs !== undefined) this.queueWait.observe({ key: e.key }, e.queuedMs / 1e3);
        } else {
          this.sessionsEnded.inc({ key: e.key, reason: e.reason ?? "OK", lane: e.lane ?? "none" });
          if (e.durationMs !== undefined) this.sessionDuration.observe({ key: e.key }, e.durationMs / 1e3);
          const lane = e.lane ?? "none";
          if (e.bytesToBoard) this.sessionBytes.inc({ direction: "to_board", lane }, e.bytesToBoard);
          if (e.bytesFromBoard) this.sessionBytes.inc({ direction: "from_board", lane }, e.bytesFromBoard);
          // The tracker's own: a direct lane's bytes never passed through it.
          if (lane === "direct") return;
          if (e.bytesToBoard) this.relayBytes.inc({ direction: "to_board" }, e.bytesToBoard);
          if (e.bytesFromBoard) this.relayBytes.inc({ direction: "from_board" }, e.bytesFromBoard);
        }
        return;
      case "agent":
        if (e.change === "attached") this.agentAttaches.inc();
        else this.agentLosses.inc();
        return;
      case "heartbeat_missed":
        this.heartbeatMisses.inc();
        return;
      case "queue":
        this.keysSeen.add(e.key);
        return;
      case "health":
        this.healthTransitions.inc({ to: e.to });
        return;
      case "board":
        return; // read from the registry at scrape time
    }
  }
}

/** Creates the tracker's metrics and serves them as `GET /metrics` on `http`. */
export function installMetrics(http: TrackerHttp, sources: MetricsSources, opts: MetricsOptions = {}): TrackerMetrics {
  const metrics = new TrackerMetrics(sources, opts);
  http.route("/metrics", async (_req, res) => {
    const body = await metrics.scrape();
    res.writeHead(200, { "content-type": metrics.contentType, "cache-control": "no-store" }).end(body);
  });
  return metrics;
}
