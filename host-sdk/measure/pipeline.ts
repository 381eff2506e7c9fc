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
 * not blamed for it (board-loop.ts says which one is).
 */
import { setMaxListeners } from "node:events";
import { availableParallelism } from "node:os";
import { FarmError, type AnyTypedArray } from "../../protos/index.ts";
import type { CompiledModule } from "../compiled-module.ts";
import { Limiter } from "../limiter.ts";
import type { TrackerClient } from "../tracker-client.ts";
import { backoff } from "./backoff.ts";
import { BoardClock } from "./board-clock.ts";
import { BoardLoop } from "./board-loop.ts";
import { BoardSession, type Measured } from "./board-session.ts";
import { candidateDigest } from "./candidate-digest.ts";
import { checkCandidate, HOPELESS, outcomeFields, outcomeOf } from "./outcomes.ts";
import { adaptedQueueDepth, initialQueueDepth } from "./queue-depth.ts";
import type { References } from "./references.ts";
import { buildReport } from "./report.ts";
import type { ResultsFile } from "./results-file.ts";
import {
  DEFAULT_IN_FLIGHT_PER_BOARD,
  DEFAULT_INFRA_DEADLINE_MS,
  DEFAULT_RETRIES,
  type Candidate,
  type CandidateSource,
  type MeasureOptions,
  type MeasureReport,
  type MeasureResult,
  type RemeasureOptions,
} from "./types.ts";

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
    // The options were checked against contract.json's limits before the batch began (Measurer).
    this.compileParallelism = opts.compileParallelism ?? availableParallelism();
    this.inFlight = opts.inFlightPerBoard ?? DEFAULT_IN_FLIGHT_PER_BOARD;
    this.depth = opts.queueDepth ?? initialQueueDepth(this.compileParallelism, slots, this.inFlight);
    this.retries = opts.retries ?? DEFAULT_RETRIES;
    this.infraDeadlineMs = opts.infraDeadlineMs ?? DEFAULT_INFRA_DEADLINE_MS;
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
    if (this.fatal === undefined)
      for (const e of this.ready.splice(0))
        this.record(e, { outcome: "INFRA_ERROR", message: this.lastInfra || "UNAVAILABLE: no board could be reached" }, e.attempts);
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
        this.record(e, { ...outcomeFields(outcomeOf(err)) }, 0);
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
      e.digest = candidateDigest({
        moduleDigest: e.module?.digest,
        definition: e.c.definition,
        function: e.c.function,
        args: e.c.args,
        atol: e.c.atol,
        rtol: e.c.rtol,
        launch: e.c.launch,
        timeEvaluator: o.timeEvaluator,
        timeoutMs: o.timeoutMs,
      });
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
    const done =
      this.fatal !== undefined || this.live === 0 || (this.exhausted && this.preparing === 0 && !this.pulling && this.taken === 0 && this.ready.length === 0);
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
        this.record(e, { board: board.session.board.id, ...outcomeFields(o) }, e.attempts);
        return;
      }
      e.sessionFailures++;
      e.firstInfraAt ??= Date.now();
      this.lastInfra = o.message;
      if (e.sessionFailures > this.retries || Date.now() - e.firstInfraAt > this.infraDeadlineMs)
        this.record(e, { board: board.session.board.id, ...outcomeFields(o) }, e.attempts);
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

  /** A fixed `queueDepth` stays; otherwise the depth follows what the batch has seen (queue-depth.ts). */
  private adaptDepth(): void {
    if (this.opts.queueDepth !== undefined) return;
    const depth = adaptedQueueDepth({
      slots: this.slots,
      inFlight: this.inFlight,
      compileParallelism: this.compileParallelism,
      boardSeconds: this.boardSeconds,
      compileSeconds: this.compileSeconds,
    });
    if (depth !== undefined) this.depth = depth;
  }

  /** Stops the batch: no more candidates are taken, and measure() rejects with `err`. */
  private stop(err: unknown): void {
    this.fatal ??= err;
    this.exhausted = true;
    this.wake();
  }

  private report(): MeasureReport {
    return buildReport({
      seconds: (performance.now() - this.t0) / 1e3,
      loops: this.loops,
      recorded: this.recorded,
      reused: this.reused,
      compileSeconds: this.compileSeconds,
      compileParallelism: this.compileParallelism,
      queueDepth: this.depth,
      inFlight: this.inFlight,
    });
  }
}
