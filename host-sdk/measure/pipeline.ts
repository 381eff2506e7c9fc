/**
 * One measure() batch as a pipeline, not rounds: candidates are pulled from
 * their source as there is room, built on the host ahead of the boards into
 * a bounded queue, and every board (each with `inFlightPerBoard` slots on
 * one session) takes the next ready candidate the moment a slot frees. A
 * search that feeds it one candidate at a time proposes with the latest
 * results in hand, and no board waits for a round's slowest candidate.
 *
 * Nothing is lost: a candidate whose session failed under it goes back to
 * the front of the queue, and a board that lost its session asks for
 * another, waiting out a tracker restart or an agent's with backoff; only
 * `infraDeadlineMs` of failure makes INFRA_ERROR a result. A slot whose
 * candidate was merely queued behind the one that crashed the session is
 * not blamed for it.
 */
import { setMaxListeners } from "node:events";
import { availableParallelism } from "node:os";
import { FarmError, type AnyTypedArray } from "../../protos/index.ts";
import { fillProblem } from "../../domain/index.ts";
import { BoardClock } from "./board-clock.ts";
import { BoardSession, type Measured } from "./board-session.ts";
import { candidateDigest } from "./candidate-digest.ts";
import type { CompiledModule } from "../compiled-module.ts";
import { Limiter } from "../limiter.ts";
import { DEFAULT_INFRA_DEADLINE_MS, type BoardReport, type Candidate, type CandidateSource, type MeasureOptions, type MeasureOutcome, type MeasureReport, type MeasureResult, type RemeasureOptions } from "./types.ts";
import type { References } from "./references.ts";
import type { ResultsFile } from "./results-file.ts";
import type { TrackerClient } from "../tracker-client.ts";

/** Default `retries`: sessions that may fail under one candidate before it is INFRA_ERROR. */
export const DEFAULT_RETRIES = 3;
/**
 * Default `inFlightPerBoard`: 1. With two, the good candidate before a
 * crashing or hanging one was charged with its failure in 2 of 3 full
 * `npm test` runs (tests/measure.test.ts, a `todo`), though the worker's
 * answers now leave it before it runs the next tenant code and the host
 * reads a lane to its close before taking the tracker's end. A second slot
 * is opt-in until the cause is found.
 */
export const DEFAULT_IN_FLIGHT_PER_BOARD = 1;
/** Backoff between session requests while the farm is unreachable: full jitter up to this, doubling from the first. */
const BACKOFF_FIRST_MS = 250;
const BACKOFF_MAX_MS = 8000;

/** Request failures that no waiting heals: the batch stops with them. */
export const HOPELESS = new Set(["UNAUTHENTICATED", "PERMISSION_DENIED", "INVALID_ARGUMENT"]);

/** A pulled candidate on its way through the pipeline. */
interface Entry {
  index: number;
  id: string;
  c: Candidate;
  module?: CompiledModule;
  expects: Promise<(AnyTypedArray | undefined)[]>;
  digest?: string;
  measuredAgain?: string;
  /** Sessions it was sent to. */
  attempts: number;
  /** Sessions that failed under it (it was the one running). */
  sessionFailures: number;
  firstInfraAt?: number;
}

/** A board's failure or a kernel's, by the farm's error code. */
export function outcomeOf(err: unknown): { outcome: MeasureOutcome; message: string; sessionLost: boolean } {
  const e = FarmError.from(err);
  const message = `${e.code}: ${e.message}`;
  switch (e.code) {
    case "COMPILE_ERROR":
    case "TOOLCHAIN_MISSING":
      return { outcome: "COMPILE_ERROR", message, sessionLost: false };
    case "BAD_BUNDLE":
    case "TARGET_MISMATCH":
    case "LOAD_ERROR":
    case "UNKNOWN_FUNCTION":
      return { outcome: "LOAD_ERROR", message, sessionLost: false };
    case "TIMEOUT":
      return { outcome: "TIMEOUT", message, sessionLost: true };
    case "RUNTIME_CRASH":
      return { outcome: "RUNTIME_ERROR", message, sessionLost: true };
    case "DEVICE_ERROR":
      // A sticky device error loses the context: the session can do nothing more.
      return { outcome: "RUNTIME_ERROR", message, sessionLost: e.details?.sticky === true };
    case "LAUNCH_ERROR":
      return { outcome: "INVALID_CONFIG", message, sessionLost: false };
    case "RUNTIME_ERROR":
    case "BAD_ARGUMENTS":
    case "OUT_OF_MEMORY":
    case "TOO_LARGE":
      return { outcome: "RUNTIME_ERROR", message, sessionLost: false };
    default:
      return { outcome: "INFRA_ERROR", message, sessionLost: true };
  }
}

/** A candidate that cannot be measured as written (the script's bug): refused before anything runs. */
export function checkCandidate(c: Candidate, id: string): void {
  const refuse = (what: string) => {
    throw new FarmError("INVALID_ARGUMENT", `measure: candidate ${id}: ${what}`);
  };
  let outputs = 0;
  c.args.forEach((a, i) => {
    if ("random" in a) {
      const problem = fillProblem(a.dtype, a.random);
      if (problem) refuse(`argument ${i}, a random ${a.dtype} input: ${problem}`);
    } else if ("output" in a) {
      outputs++;
      if (a.expect && c.reference) refuse(`argument ${i} has an expect and the candidate a reference function: give one`);
    }
  });
  if (c.reference && outputs === 0) refuse("a reference function, but no output arguments to check");
}

/** What the pipeline needs from its Measurer: sessions kept from the last batch, and where to put them back. */
export interface SessionPool {
  take(): BoardSession | undefined;
  keep(s: BoardSession): void;
}

export interface PipelineHooks {
  /** Every result, as it is recorded or reused. */
  record(r: MeasureResult, reused: boolean): void;
  /** A slot started or finished a candidate on a board (for the progress line). */
  running(delta: number): void;
}

/** One board: a session shared by its slots, replaced when lost. */
class BoardLoop {
  session?: BoardSession;
  private acquiring?: Promise<BoardSession | undefined>;
  readonly boards: string[] = [];
  candidates = 0;
  /** When this board's session requests began to fail, if they are failing: its outage clock. */
  outageSince?: number;
  /**
   * Per session, its Measure requests in the order they went out from the
   * first the board has not answered well (those before it can be no
   * culprit), and whether the board answered each. Weak: a session dropped
   * and let go takes its entries with it.
   */
  private readonly sent = new WeakMap<BoardSession, { index: number; ok?: boolean }[]>();
  /** Per lost session: the candidate whose run it died in. */
  private readonly culprit = new WeakMap<BoardSession, number>();

  constructor(
    readonly clock: BoardClock,
    private readonly obtain: () => Promise<BoardSession | undefined>,
  ) {}

  /** The board's session, asking for one (once, for all its slots) when it has none. Undefined: none can be had. */
  async acquire(): Promise<BoardSession | undefined> {
    if (this.session && !this.session.session.isClosed) return this.session;
    this.acquiring ??= this.obtain().then((s) => {
      this.acquiring = undefined;
      if (s) {
        this.session = s;
        if (this.boards.at(-1) !== s.session.board.id) this.boards.push(s.session.board.id);
      }
      return s;
    });
    return this.acquiring;
  }

  /** Forgets a lost session (unless already replaced) and closes it. */
  drop(s: BoardSession): void {
    if (this.session === s) this.session = undefined;
    s.session.close().catch(() => {});
  }

  measureSent(s: BoardSession, index: number): void {
    if (!this.sent.has(s)) this.sent.set(s, []);
    this.sent.get(s)!.push({ index });
    this.clock.measureSent();
  }

  measureSettled(s: BoardSession, index: number, ok: boolean): void {
    const sent = this.sent.get(s);
    const entry = sent?.find((e) => e.index === index && e.ok === undefined);
    if (entry) entry.ok = ok;
    while (sent?.[0]?.ok === true) sent.shift();
    this.clock.measureDone();
  }

  /**
   * Whether candidate `index` is the one its lost session died under: the
   * board serves a session's requests in order, so it is the first request
   * sent that the board did not answer — the ones behind it failed because
   * of it. A candidate that failed before its request went out (an upload)
   * is the culprit only if no request was outstanding.
   */
  blame(s: BoardSession, index: number): boolean {
    if (!this.culprit.has(s)) this.culprit.set(s, this.sent.get(s)?.find((e) => e.ok !== true)?.index ?? index);
    return this.culprit.get(s) === index;
  }
}

export class Pipeline {
  readonly results: (MeasureResult | undefined)[] = [];
  /** The batch's fatal error: a reference function or `when` that threw, a source that threw, a request refused for good. */
  fatal: unknown;
  private readonly ready: Entry[] = [];
  private readonly ids = new Set<string>();
  private pulled = 0;
  private preparing = 0;
  private pulling = false;
  private exhausted = false;
  private readonly waiters: (() => void)[] = [];
  /** Aborted when the batch needs no more sessions (its work is done, or it stopped): requests and backoffs give up. */
  private readonly finished = new AbortController();
  private readonly loops: BoardLoop[] = [];
  private readonly compiles: Limiter;
  private readonly compileSeconds: number[] = [];
  /** Candidates taken by a slot and not yet recorded or queued again. */
  private taken = 0;
  /** The boards' own seconds per candidate (measure_wall_ns), for their capacity. */
  private readonly boardSeconds: number[] = [];
  private readonly t0 = performance.now();
  private recorded = 0;
  private reused = 0;
  private lastInfra = "";
  /** Loops still able to obtain a session. */
  private live = 0;
  readonly compileParallelism: number;
  readonly inFlight: number;
  private depth: number;
  private readonly retries: number;
  private readonly infraDeadlineMs: number;
  private readonly remeasure?: Required<RemeasureOptions>;

  constructor(
    private readonly client: TrackerClient,
    private readonly source: CandidateSource,
    private readonly opts: MeasureOptions,
    private readonly file: ResultsFile,
    private readonly references: References,
    private readonly pool: SessionPool,
    private readonly hooks: PipelineHooks,
    remeasure: Required<RemeasureOptions> | undefined,
    private readonly slots: number,
  ) {
    // Every board's request or backoff listens for the batch's end: one listener per board, however many boards.
    setMaxListeners(0, this.finished.signal);
    this.compileParallelism = positive(opts.compileParallelism, "compileParallelism") ?? availableParallelism();
    this.inFlight = positive(opts.inFlightPerBoard, "inFlightPerBoard") ?? DEFAULT_IN_FLIGHT_PER_BOARD;
    this.depth = positive(opts.queueDepth, "queueDepth") ?? this.compileParallelism + slots * this.inFlight;
    this.retries = opts.retries ?? DEFAULT_RETRIES;
    if (!Number.isInteger(this.retries) || this.retries < 0) throw new FarmError("INVALID_ARGUMENT", `measure: retries must be an integer ≥ 0, got ${opts.retries}`);
    this.infraDeadlineMs = opts.infraDeadlineMs ?? DEFAULT_INFRA_DEADLINE_MS;
    if (!(this.infraDeadlineMs >= 0)) throw new FarmError("INVALID_ARGUMENT", `measure: infraDeadlineMs must be ≥ 0, got ${opts.infraDeadlineMs}`);
    this.compiles = new Limiter(this.compileParallelism);
    this.remeasure = remeasure;
  }

  async run(): Promise<MeasureReport> {
    for (let b = 0; b < this.slots; b++) {
      const clock = new BoardClock(this.inFlight, () => this.waitCause());
      const loop: BoardLoop = new BoardLoop(clock, () => this.obtainSession(loop));
      this.loops.push(loop);
    }
    this.live = this.loops.length;
    this.fill();
    await Promise.all(this.loops.flatMap((loop) => Array.from({ length: this.inFlight }, (_, slot) => this.runSlot(loop, slot))));
    // Builds still running write their results (a compile error) before the batch ends.
    while (this.preparing > 0 || this.pulling) await new Promise<void>((resolve) => this.waiters.push(resolve));
    // Candidates nobody could measure (the farm stayed away past the deadline) still get their result.
    if (this.fatal === undefined) for (const e of this.ready.splice(0)) this.record(e, { outcome: "INFRA_ERROR", message: this.lastInfra || "UNAVAILABLE: no board could be reached" }, e.attempts);
    for (const loop of this.loops) {
      loop.clock.tick();
      if (loop.session && !loop.session.session.isClosed) this.pool.keep(loop.session);
    }
    return this.report();
  }

  // ---- the feeder: pull, build, resume -------------------------------------------------------------------------

  /** Pulls candidates while the queue ahead of the boards has room. */
  private fill(): void {
    if (this.pulling || this.exhausted || this.fatal !== undefined || this.live === 0) return;
    if (this.preparing + this.ready.length >= this.depth) return;
    this.changing();
    this.pulling = true;
    Promise.resolve()
      .then(() => this.source.next())
      .then(
        (c) => {
          this.changing();
          this.pulling = false;
          if (c === undefined) this.exhausted = true;
          else this.prepare(c);
          this.wake();
          this.fill();
        },
        (err) => {
          this.changing();
          this.pulling = false;
          this.stop(err);
        },
      );
  }

  private prepare(c: Candidate): void {
    const index = this.pulled++;
    const id = c.id ?? `c${index}`;
    try {
      if (this.ids.has(id)) throw new FarmError("INVALID_ARGUMENT", `measure: candidate ids must be unique; ${id} came twice`);
      this.ids.add(id);
      checkCandidate(c, id);
    } catch (err) {
      this.stop(err);
      return;
    }
    const expects = this.references.expected(c, id);
    expects.catch(() => {}); // awaited by the slot that takes it, where a failure stops the batch
    const e: Entry = { index, id, c, expects, attempts: 0, sessionFailures: 0 };
    this.preparing++;
    void this.build(e).finally(() => {
      this.changing();
      this.preparing--;
      this.wake();
      this.fill();
    });
  }

  /** Builds the candidate's module unless its results-file line can be reused, and queues it for the boards. */
  private async build(e: Entry): Promise<void> {
    const m = e.c.module;
    if (e.c.definition !== undefined || typeof m !== "function") {
      e.module = typeof m === "function" ? undefined : m;
      if (this.resumed(e, this.digestOf(e))) return;
    }
    if (!e.module) {
      const t = performance.now();
      try {
        e.module = await this.compiles.run(m as () => Promise<CompiledModule>);
      } catch (err) {
        if (e.c.definition === undefined && this.resumed(e, undefined)) return;
        this.record(e, { ...pick(outcomeOf(err)) }, 0);
        return;
      } finally {
        this.compileSeconds.push((performance.now() - t) / 1e3);
      }
      if (e.c.definition === undefined && this.resumed(e, this.digestOf(e))) return;
    }
    this.changing();
    this.insertReady(e);
  }

  private digestOf(e: Entry): string | undefined {
    const o = this.opts;
    try {
      e.digest = candidateDigest({ moduleDigest: e.module?.digest, definition: e.c.definition, function: e.c.function, args: e.c.args, atol: e.c.atol, rtol: e.c.rtol, launch: e.c.launch, timeEvaluator: o.timeEvaluator, timeoutMs: o.timeoutMs });
    } catch (err) {
      this.stop(err);
    }
    return e.digest;
  }

  /** Reuses the candidate's line when it describes it (true), else notes why it is measured again. */
  private resumed(e: Entry, digest: string | undefined): boolean {
    const r = this.file.resume(e.id, digest);
    if ("reuse" in r) {
      this.reused++;
      this.results[e.index] = { ...r.reuse, index: e.index };
      this.hooks.record(this.results[e.index]!, true);
      return true;
    }
    if (r.measuredAgain) e.measuredAgain = r.measuredAgain;
    return false;
  }

  private insertReady(e: Entry): void {
    let at = this.ready.length;
    while (at > 0 && this.ready[at - 1]!.index > e.index) at--;
    this.ready.splice(at, 0, e);
  }

  // ---- the boards ----------------------------------------------------------------------------------------------

  /** What a slot waiting for a candidate waits for right now. */
  private waitCause(): "compile" | "host" | "tail" {
    if (this.pulling) return "host";
    if (this.preparing > 0) return "compile";
    return "tail";
  }

  /** Before the pipeline's state changes: every board's clock books the time so far under the state that held. */
  private changing(): void {
    for (const l of this.loops) l.clock.tick();
  }

  private wake(): void {
    const done = this.fatal !== undefined || this.live === 0 || (this.exhausted && this.preparing === 0 && !this.pulling && this.taken === 0 && this.ready.length === 0);
    if (done) this.finished.abort();
    for (const w of this.waiters.splice(0)) w();
  }

  /** The next candidate for a board, waiting for one to be built; undefined when there will be none. */
  private async take(): Promise<Entry | undefined> {
    for (;;) {
      if (this.fatal !== undefined) return undefined;
      if (this.live === 0) return undefined;
      const e = this.ready.shift();
      if (e) {
        this.taken++;
        this.fill();
        return e;
      }
      // Done only when nothing can come back either: a candidate in flight elsewhere may return to the queue.
      if (this.exhausted && this.preparing === 0 && !this.pulling && this.taken === 0) return undefined;
      this.fill();
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  private async runSlot(loop: BoardLoop, slot: number): Promise<void> {
    const { clock } = loop;
    for (;;) {
      // A session first: a board waiting out an outage holds no candidate that a live board could measure.
      clock.set(slot, "session");
      const board = await loop.acquire();
      if (!board) break;
      clock.set(slot, "wait");
      const e = await this.take();
      if (!e) break;
      try {
        if (board.session.isClosed) {
          this.requeue(e); // lost while this slot waited: costs the candidate nothing
          continue;
        }
        clock.set(slot, "host");
        let expects: (AnyTypedArray | undefined)[];
        try {
          expects = await e.expects;
        } catch (err) {
          this.stop(err);
          break;
        }
        clock.set(slot, "transfer");
        await this.measureOn(loop, board, e, expects);
      } finally {
        this.changing();
        this.taken--;
        this.wake();
      }
    }
    clock.set(slot, "tail");
    this.wake();
  }

  private async measureOn(loop: BoardLoop, board: BoardSession, e: Entry, expects: (AnyTypedArray | undefined)[]): Promise<void> {
    const invalid = board.launchRefusal(e.module!, e.c);
    if (invalid) {
      this.record(e, { board: board.session.board.id, outcome: "INVALID_CONFIG", message: invalid }, e.attempts + 1);
      return;
    }
    e.attempts++;
    this.hooks.running(+1);
    try {
      const again = this.remeasure && this.againFor(e);
      const events = { sent: () => loop.measureSent(board, e.index), settled: (ok: boolean) => loop.measureSettled(board, e.index, ok) };
      const r = await board.run(e.module!, e.c, expects, this.opts, events, again);
        const wall = r.stats?.measure_wall_ns;
      if (wall) this.boardSeconds.push(wall / 1e9);
      loop.candidates++;
      this.record(e, r, e.attempts);
    } catch (err) {
      const o = outcomeOf(err);
      if (o.sessionLost) {
        loop.drop(board);
        if (!loop.blame(board, e.index)) {
          // Queued behind the candidate that lost the session: not this one's doing.
          e.attempts--;
          this.requeue(e);
          return;
        }
      }
      if (o.outcome !== "INFRA_ERROR") {
        this.record(e, { board: board.session.board.id, ...pick(o) }, e.attempts);
        return;
      }
      e.sessionFailures++;
      e.firstInfraAt ??= Date.now();
      this.lastInfra = o.message;
      if (e.sessionFailures > this.retries || Date.now() - e.firstInfraAt > this.infraDeadlineMs) this.record(e, { board: board.session.board.id, ...pick(o) }, e.attempts);
      else this.requeue(e); // transparently again, on a fresh session (the board may be gone: the tracker picks another)
    } finally {
      this.hooks.running(-1);
    }
  }

  private requeue(e: Entry): void {
    this.changing();
    this.insertReady(e);
  }

  private againFor(e: Entry): { times: number; when: (r: Measured) => boolean } {
    const { times, when } = this.remeasure!;
    return {
      times,
      when: (r) => {
        try {
          return when({ index: e.index, id: e.id, attempts: e.attempts, ...r });
        } catch (err) {
          // The script's bug, as a reference function that throws: this result stands, and the batch stops.
          this.stop(new FarmError("INVALID_ARGUMENT", `measure: remeasure.when threw for candidate ${e.id}: ${(err as Error).message}`, { cause: err }));
          return false;
        }
      },
    };
  }

  /**
   * A session for `loop`: one kept from the last batch, or the tracker's
   * grant. An outage (tracker unreachable, no free board, the key's boards
   * gone while their agents restart) is waited out with backoff until
   * `infraDeadlineMs`; undefined then, or when the batch stopped.
   */
  private async obtainSession(loop: BoardLoop): Promise<BoardSession | undefined> {
    const kept = this.pool.take();
    if (kept) return kept;
    const { signal } = this.finished;
    for (let failures = 0; ; failures++) {
      if (signal.aborted) return undefined;
      try {
        const s = new BoardSession(await this.client.request(this.opts.key, { labels: this.opts.labels, deadlineMs: this.opts.deadlineMs ?? 60_000, signal }));
        loop.outageSince = undefined;
        return s;
      } catch (err) {
        if (signal.aborted) return undefined;
        const e = FarmError.from(err);
        if (HOPELESS.has(e.code)) {
          this.stop(e);
          return undefined;
        }
        this.lastInfra = `${e.code}: ${e.message}`;
        loop.outageSince ??= Date.now();
        if (Date.now() - loop.outageSince > this.infraDeadlineMs) {
          this.changing();
          this.live--;
          this.wake();
          return undefined;
        }
        await backoff(failures, signal);
      }
    }
  }

  // ---- results -------------------------------------------------------------------------------------------------

  private record(e: Entry, r: Measured, attempts: number): void {
    this.recorded++;
    const result: MeasureResult = {
      index: e.index,
      id: e.id,
      attempts,
      ...r,
      ...(e.digest ? { digest: e.digest } : {}),
      ...(e.measuredAgain ? { measuredAgain: e.measuredAgain } : {}),
    };
    this.results[e.index] = result;
    this.file.append(result);
    this.hooks.record(result, false);
    this.adaptDepth();
  }

  /**
   * The queue depth that covers a slow compile (the 90th percentile seen)
   * at the boards' capacity — their count over the median of their own time
   * per candidate — with half again for luck: by Little's law, that many
   * candidates must be building for the boards never to wait for the
   * compiler. No deeper, since a search proposes everything in the queue
   * without the results still to come; and never from the achieved rate,
   * which a compiler that falls behind would drag down with it.
   */
  private adaptDepth(): void {
    if (this.opts.queueDepth !== undefined || this.boardSeconds.length < this.slots || this.compileSeconds.length < 4) return;
    const capacity = this.slots / Math.max(percentile(this.boardSeconds, 0.5), 1e-3);
    const slow = percentile(this.compileSeconds, 0.9);
    const base = this.slots * this.inFlight;
    this.depth = Math.min(this.compileParallelism + 2 * base, base + Math.ceil(1.5 * capacity * slow));
  }


  /** Stops the batch: no more candidates are taken, and measure() rejects with `err`. */
  private stop(err: unknown): void {
    this.fatal ??= err;
    this.exhausted = true;
    this.wake();
  }

  private report(): MeasureReport {
    const seconds = (performance.now() - this.t0) / 1e3;
    const boards: BoardReport[] = this.loops.map((l) => ({
      boards: l.boards,
      candidates: l.candidates,
      busy: seconds > 0 ? l.clock.busySeconds / seconds : 0,
      idle: { ...l.clock.idle },
      candidatesPerSecond: seconds > 0 ? l.candidates / seconds : 0,
    }));
    const sorted = [...this.compileSeconds].sort((a, b) => a - b);
    return {
      seconds,
      candidates: this.recorded,
      reused: this.reused,
      candidatesPerSecond: seconds > 0 ? this.recorded / seconds : 0,
      busy: boards.length ? boards.reduce((s, b) => s + b.busy, 0) / boards.length : 0,
      compileParallelism: this.compileParallelism,
      queueDepth: this.depth,
      inFlightPerBoard: this.inFlight,
      compiles: { count: sorted.length, medianSeconds: sorted[Math.floor(sorted.length / 2)] ?? 0, maxSeconds: sorted.at(-1) ?? 0 },
      boards,
    };
  }
}

function percentile(xs: readonly number[], q: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

function pick(o: { outcome: MeasureOutcome; message: string }): { outcome: MeasureOutcome; message: string } {
  return { outcome: o.outcome, message: o.message };
}

function positive(v: number | undefined, name: string): number | undefined {
  if (v === undefined) return undefined;
  if (!Number.isInteger(v) || v < 1) throw new FarmError("INVALID_ARGUMENT", `measure: ${name} must be an integer ≥ 1, got ${v}`);
  return v;
}

/** Full jitter: a uniform wait up to a cap that doubles per failure, so restarted clients do not come back in step. */
export function backoff(failures: number, signal?: AbortSignal): Promise<void> {
  const cap = Math.min(BACKOFF_MAX_MS, BACKOFF_FIRST_MS * 2 ** failures);
  return new Promise((resolve) => {
    const timer = setTimeout(done, Math.random() * cap);
    signal?.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
  });
}
