/**
 * measure(): the farm as a measurement service for auto-tuners. Many
 * candidates, one result each — never fewer — with a closed set of outcomes
 * (autotvm's MeasureErrorNo): compiled on the host in parallel, measured on
 * every matching board at once with one session per board for the whole
 * batch, checked against a reference before and after timing with poisoned
 * outputs, infrastructure failures retried once on another board, results
 * appended as JSON lines so a restarted batch skips what is done; on
 * request, a result measured while the GPU was throttled (or flagged by the
 * caller's own test) is measured again on the same session.
 */
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import {
  CHUNK_BYTES, FarmError, cudaLaunchLimitsFrom, cudaLaunchProblem, toLaunchConfig, dtypeOf, throttledOf, elementCount, fillProblem, fillRange, randomArray, type AnyTypedArray, type CudaLaunchLimits, type Dtype, type LaunchDecl, type RandomFill,
} from "../protos/index.ts";
import type { CompiledModule } from "./compiled-module.ts";
import type { KernelResources } from "./cuda/index.ts";
import { Limiter } from "./limiter.ts";
import type { RemoteArray, RemoteModule, Session, TimeEvaluatorOptions } from "./session.ts";
import type { TrackerClient } from "./tracker-client.ts";

/**
 * INVALID_CONFIG: a configuration that cannot launch on the board (block size, registers, shared memory), told on the
 * host from ptxas's report and the board's registered limits before anything is uploaded, or by the board's own launch check.
 */
export const MEASURE_OUTCOMES = ["OK", "INVALID_CONFIG", "COMPILE_ERROR", "LOAD_ERROR", "RUNTIME_ERROR", "WRONG_ANSWER", "TIMEOUT", "INFRA_ERROR"] as const;
export type MeasureOutcome = (typeof MEASURE_OUTCOMES)[number];

/**
 * One kernel argument: data sent from the host, data generated on the board
 * from a seed (protos/random.ts; nothing crosses the network), an output to
 * check, or a scalar.
 */
export type MeasureArg =
  | { input: AnyTypedArray; shape?: number[] }
  | { random: RandomFill; shape: number[]; dtype: Dtype }
  | { output: { shape: number[]; dtype: Dtype }; expect?: AnyTypedArray }
  | { scalar: number };

/**
 * The expected contents of a candidate's outputs, computed on the host from
 * its inputs (host data as given, seeded inputs generated here as the board
 * does): one array per output argument, in argument order. Called once per
 * distinct function and inputs in a batch, however many candidates share them.
 */
export type ReferenceFn = (inputs: AnyTypedArray[]) => AnyTypedArray[] | Promise<AnyTypedArray[]>;

export interface Candidate {
  /** Stable id, kept in the results file for resumption; default `c<index>`. */
  id?: string;
  /** The module, or how to build it on the host (run in parallel, at most one per core). */
  module: CompiledModule | (() => Promise<CompiledModule>);
  function: string;
  args: MeasureArg[];
  /** Computes the outputs' expected contents, for outputs without `expect`. */
  reference?: ReferenceFn;
  /** Output tolerances: |got − want| ≤ atol + rtol·|want|. Default exact. */
  atol?: number;
  rtol?: number;
  /** CUDA: the launch configuration. */
  launch?: LaunchDecl;
}

export interface MeasureOptions {
  key: string;
  labels?: Record<string, string>;
  /** Boards to use at most; default every board of the key (that the labels select). */
  boards?: number;
  /** time_evaluator settings; default { number: 10, repeat: 3 }. */
  timeEvaluator?: Omit<TimeEvaluatorOptions, "launch" | "timeoutMs">;
  /** Per-candidate timeout on the board (each call and the timing). Default 10 s. */
  timeoutMs?: number;
  /** Retries of a candidate that met an infrastructure failure, each on a fresh session. Default 1. */
  retries?: number;
  /** JSON-lines results file: appended per candidate; candidates already in it are skipped. */
  resultsFile?: string;
  /** Called with each result as it is recorded (after its results-file line), in completion order: a search can act before the batch ends. */
  onResult?: (result: MeasureResult) => void;
  /** Progress line on stderr: default when stderr is a terminal. */
  progress?: boolean;
  /** How long to wait for boards when opening sessions. Default 60 s. */
  deadlineMs?: number;
  /**
   * Measure again, on the same session, an OK result that `when` flags —
   * by default one measured while the GPU was throttled — up to `times`
   * more times (default 2) until one is not flagged. `true`: the defaults.
   * Off by default: a kernel that draws the GPU to its power cap stays
   * capped however often it is measured, and every result says
   * `throttled` either way.
   */
  remeasure?: boolean | RemeasureOptions;
}

/** measure()'s `remeasure` option. */
export interface RemeasureOptions {
  /** Which OK results to measure again. Default: measured while throttled (`result.throttled === true`). */
  when?: (result: MeasureResult) => boolean;
  /** Re-measurements at most per candidate. Default DEFAULT_REMEASURE_TIMES. */
  times?: number;
}

/** Re-measurements of a flagged result at most, by default: a throttled GPU that has not recovered after two more timings is unlikely to in a third. */
export const DEFAULT_REMEASURE_TIMES = 2;

/** remeasure's default test. */
function measuredWhileThrottled(r: MeasureResult): boolean {
  return r.throttled === true;
}

/** `remeasure` with its defaults, or undefined when off. */
function resolveRemeasure(o: MeasureOptions["remeasure"]): Required<RemeasureOptions> | undefined {
  if (!o) return undefined;
  const { when = measuredWhileThrottled, times = DEFAULT_REMEASURE_TIMES } = o === true ? {} : o;
  if (!Number.isInteger(times) || times < 0) throw new FarmError("INVALID_ARGUMENT", `measure: remeasure.times must be an integer ≥ 0, got ${times}`);
  if (typeof when !== "function") throw new FarmError("INVALID_ARGUMENT", "measure: remeasure.when must be a function of a result");
  return { when, times };
}

export interface MeasureResult {
  index: number;
  id: string;
  outcome: MeasureOutcome;
  /** Why it is not OK, in the farm's words (error code and message). */
  message?: string;
  /** Seconds per call of each repeat, and their summary. */
  timing?: { results: number[]; mean: number; median: number; min: number; max: number; std: number; number: number; rse?: number; stoppedBy?: string };
  stats?: Record<string, number>;
  board?: string;
  conditions?: Record<string, string>;
  /**
   * Whether the board says the GPU was throttled while it timed (from
   * `conditions.throttled`, which names why); absent where the board cannot
   * tell or does not say (CPU and VTA boards, a GPU without NVML).
   */
  throttled?: boolean;
  /** Timings it took on its board, when more than one (`remeasure`): this result is the last. */
  measurements?: number;
  /** With `remeasure`: the last timing was still flagged (throttled, by default) when the re-measurements ran out. */
  flagged?: true;
  /** Sessions it took: 2 after a retried infrastructure failure. */
  attempts: number;
}

/** A board's failure or a kernel's, by the farm's error code. */
function outcomeOf(err: unknown): { outcome: MeasureOutcome; message: string; sessionLost: boolean } {
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

class Progress {
  private readonly t0 = Date.now();
  done = 0;
  failed = 0;
  running = 0;
  constructor(
    private readonly total: number,
    private readonly on: boolean,
  ) {}
  draw(): void {
    if (!this.on) return;
    const s = (Date.now() - this.t0) / 1e3;
    const rate = this.done / Math.max(s, 1e-3);
    const eta = rate > 0 ? (this.total - this.done) / rate : 0;
    process.stderr.write(`\r measure: ${this.done}/${this.total} done, ${this.failed} failed, ${this.running} running · ${rate.toFixed(1)}/s · ETA ${eta.toFixed(0)} s   `);
  }
  end(): void {
    if (this.on) process.stderr.write("\n");
  }
}

/**
 * Measures every candidate on the boards of `opts.key`; resolves with one
 * result per candidate, in candidate order. Its sessions end with it: a
 * search that measures batch after batch keeps them with a Measurer.
 */
export async function measure(client: TrackerClient, candidates: readonly Candidate[], opts: MeasureOptions): Promise<MeasureResult[]> {
  const m = new Measurer(client, opts);
  try {
    return await m.measure(candidates);
  } finally {
    await m.close();
  }
}

/** What may change from one batch of a Measurer to the next: not the boards it holds. */
export type BatchOptions = Omit<MeasureOptions, "key" | "labels" | "boards" | "deadlineMs">;

/**
 * A tuning run's measurement service: batches that keep their sessions, and
 * what is in them (modules, arrays, reference outputs), from one batch to
 * the next. A search that measures a generation at a time then opens each
 * board's session once, and a CPU or CUDA board boots one successor worker
 * for the whole run rather than one per generation. The sessions hold their
 * boards between batches: close() gives them back.
 */
export class Measurer {
  /** Sessions between batches, their boards held. */
  private readonly idle: BoardSession[] = [];
  private readonly references = new References();
  private running = false;
  private closed = false;

  constructor(
    private readonly client: TrackerClient,
    private readonly opts: MeasureOptions,
  ) {}

  /** One batch (see measure()); `batchOpts` override this Measurer's options for it. */
  async measure(candidates: readonly Candidate[], batchOpts: BatchOptions = {}): Promise<MeasureResult[]> {
    if (this.closed) throw new FarmError("INVALID_ARGUMENT", "measure: this Measurer is closed");
    if (this.running) throw new FarmError("INVALID_ARGUMENT", "measure: a Measurer runs one batch at a time; await the previous one");
    this.running = true;
    try {
      // The boards this Measurer holds stay its own, whatever a batch passes.
      const { key, labels, boards, deadlineMs } = this.opts;
      return await this.batch(candidates, { ...this.opts, ...batchOpts, key, labels, boards, deadlineMs });
    } finally {
      this.running = false;
    }
  }

  /** Ends the sessions: their boards go back to the farm. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.idle.splice(0).map((s) => s.session.close().catch(() => {})));
  }

  /** A session kept from an earlier batch that is still open, if any. */
  private takeIdle(): BoardSession | undefined {
    for (let s = this.idle.pop(); s; s = this.idle.pop()) {
      if (!s.session.isClosed) return s;
    }
    return undefined;
  }

  private async batch(candidates: readonly Candidate[], opts: MeasureOptions): Promise<MeasureResult[]> {
    const { client, references } = this;
    const ids = candidates.map((c, i) => c.id ?? `c${i}`);
    if (new Set(ids).size !== ids.length) throw new FarmError("INVALID_ARGUMENT", "measure: candidate ids must be unique");
    candidates.forEach((c, i) => checkArgs(c, ids[i]!));
    const remeasure = resolveRemeasure(opts.remeasure);
    const results: (MeasureResult | undefined)[] = new Array(candidates.length);
    const known = readResults(opts.resultsFile);
    ids.forEach((id, i) => {
      const r = known.get(id);
      if (r) results[i] = { ...r, index: i };
    });
    const unmeasured = candidates.map((_, i) => i).filter((i) => !results[i]);
    const progress = new Progress(unmeasured.length, opts.progress ?? process.stderr.isTTY === true);
    const record = (r: MeasureResult) => {
      results[r.index] = r;
      progress.done++;
      if (r.outcome !== "OK") progress.failed++;
      if (opts.resultsFile) appendFileSync(opts.resultsFile, `${JSON.stringify(r)}\n`);
      progress.draw();
      opts.onResult?.(r);
    };

    // Host compilation, in parallel, started now and awaited per candidate.
    const compiles = new Limiter(availableParallelism());
    const modules = new Map<number, Promise<CompiledModule>>();
    /** Modules already built, for sending the next candidate's while the board measures. */
    const compiled = new Map<number, CompiledModule>();
    for (const i of unmeasured) {
      const m = candidates[i]!.module;
      modules.set(i, typeof m === "function" ? compiles.run(m) : Promise.resolve(m));
      // Awaited per candidate later, where a failure becomes its result.
      modules.get(i)!.then((built) => compiled.set(i, built), () => {});
    }

    const queue = [...unmeasured];
    const attempts = new Map<number, number>();
    const retries = opts.retries ?? 1;
    const summary = await client.summary({ key: opts.key });
    const matching = summary.boards.filter((b) => b.key === opts.key && Object.entries(opts.labels ?? {}).every(([k, v]) => b.labels[k] === v));
    const slots = Math.max(1, Math.min(opts.boards ?? matching.length, matching.length || 1, queue.length));

    /** A reference function that failed: the script's bug, not a measurement; the batch stops and measure() rejects. */
    let fatal: unknown;
    /** Board loops of this batch waiting for the tracker to grant them a session. */
    let requesting = 0;
    const request = async (): Promise<BoardSession> => {
      requesting++;
      try {
        return new BoardSession(await client.request(opts.key, { labels: opts.labels, deadlineMs: opts.deadlineMs ?? 60_000 }));
      } finally {
        requesting--;
      }
    };

    const runBoard = async (): Promise<void> => {
      let session: BoardSession | undefined;
      const drop = async () => {
        const s = session;
        session = undefined;
        await s?.session.close().catch(() => {});
      };
      try {
        while (queue.length > 0) {
          const index = queue.shift()!;
          const attempt = (attempts.get(index) ?? 0) + 1;
          attempts.set(index, attempt);
          const c = candidates[index]!;
          let module: CompiledModule;
          try {
            module = await modules.get(index)!;
          } catch (err) {
            record({ index, id: ids[index]!, attempts: 0, ...pick(outcomeOf(err)) });
            continue;
          }
          let expects: (AnyTypedArray | undefined)[];
          try {
            expects = await references.expected(c, ids[index]!);
          } catch (err) {
            fatal ??= err;
            queue.length = 0;
            break;
          }
          progress.running++;
          progress.draw();
          try {
            session ??= this.takeIdle() ?? (await request());
            const board = session;
            const invalid = board.launchRefusal(module, c);
            if (invalid) {
              record({ index, id: ids[index]!, attempts: attempt, board: board.session.board.id, outcome: "INVALID_CONFIG", message: invalid });
              continue;
            }
            const prefetchNext = () => {
              const at = queue[0];
              const next = at === undefined ? undefined : compiled.get(at);
              if (next && !board.launchRefusal(next, candidates[at!]!)) board.prefetch(next).catch(() => {});
            };
            const again = remeasure && {
              times: remeasure.times,
              when: (r: Measured) => {
                try {
                  return remeasure.when({ index, id: ids[index]!, attempts: attempt, ...r });
                } catch (err) {
                  // The script's bug, as a reference function that throws: this result stands, and the batch stops.
                  fatal ??= new FarmError("INVALID_ARGUMENT", `measure: remeasure.when threw for candidate ${ids[index]}: ${(err as Error).message}`, { cause: err });
                  queue.length = 0;
                  return false;
                }
              },
            };
            record({ index, id: ids[index]!, attempts: attempt, ...(await session.run(module, c, expects, opts, prefetchNext, again)) });
          } catch (err) {
            const o = outcomeOf(err);
            // Named before a lost session is dropped: a tuner must know which board crashed or hung. A compile error involved none.
            const board = o.outcome === "COMPILE_ERROR" ? undefined : session?.session.board.id;
            if (o.sessionLost) await drop();
            if (o.outcome === "INFRA_ERROR" && attempt <= retries) {
              // Transparently again, on a fresh session (the board may be gone: the tracker picks another).
              queue.unshift(index);
            } else {
              record({ index, id: ids[index]!, attempts: attempt, ...(board ? { board } : {}), ...pick(o) });
            }
          } finally {
            progress.running--;
          }
        }
      } finally {
        // Kept for the next batch, unless the Measurer is done with its boards, or another
        // loop of this batch waits for a board (after a lost one, this may be the only one left).
        if (session && !session.session.isClosed && !this.closed && requesting === 0) this.idle.push(session);
        else await drop();
      }
    };
    await Promise.all(Array.from({ length: slots }, runBoard));
    progress.end();
    if (fatal) throw fatal;
    return results.map((r, i) => r ?? { index: i, id: ids[i]!, outcome: "INFRA_ERROR", message: "INTERNAL: not measured", attempts: attempts.get(i) ?? 0 });
  }
}

/** A candidate that cannot be measured as written (the script's bug): refused before anything runs. */
function checkArgs(c: Candidate, id: string): void {
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

/** Each reference function's outputs, per distinct inputs, computed once a batch. */
class References {
  private readonly byFunction = new Map<ReferenceFn, Map<string, Promise<AnyTypedArray[]>>>();
  private readonly hostInputIds = new WeakMap<AnyTypedArray, number>();
  private hostInputs = 0;
  private readonly seeded = new Map<string, AnyTypedArray>();

  /** The expected contents per argument (undefined: not a checked output). */
  async expected(c: Candidate, id: string): Promise<(AnyTypedArray | undefined)[]> {
    if (!c.reference) return c.args.map((a) => ("output" in a ? a.expect : undefined));
    const inputs: AnyTypedArray[] = [];
    const keys: string[] = [];
    for (const a of c.args) {
      if ("input" in a) {
        let n = this.hostInputIds.get(a.input);
        if (n === undefined) this.hostInputIds.set(a.input, (n = this.hostInputs++));
        inputs.push(a.input);
        keys.push(`h${n}`);
      } else if ("random" in a) {
        const { low, high } = fillRange(a.dtype, a.random);
        const key = `r${a.dtype}[${a.shape.join(",")}]${a.random.seed}:${low}:${high}:${a.random.integers === true}`;
        let data = this.seeded.get(key);
        if (!data) this.seeded.set(key, (data = randomArray(a.dtype, elementCount(a.shape), a.random)));
        inputs.push(data);
        keys.push(key);
      }
    }
    let memo = this.byFunction.get(c.reference);
    if (!memo) this.byFunction.set(c.reference, (memo = new Map()));
    const key = keys.join("|");
    let outs = memo.get(key);
    if (!outs) memo.set(key, (outs = Promise.resolve().then(() => c.reference!(inputs))));
    let got: AnyTypedArray[];
    try {
      got = await outs;
    } catch (err) {
      throw new FarmError("INVALID_ARGUMENT", `measure: the reference function of candidate ${id} threw: ${(err as Error).message}`, { cause: err });
    }
    const outputs = c.args.flatMap((a) => ("output" in a ? [a.output] : []));
    if (!Array.isArray(got) || got.length !== outputs.length) {
      throw new FarmError("INVALID_ARGUMENT", `measure: the reference function of candidate ${id} returned ${Array.isArray(got) ? got.length : typeof got} array(s) for ${outputs.length} output(s)`);
    }
    outputs.forEach((o, k) => {
      const r = got[k]!;
      if (!ArrayBuffer.isView(r) || dtypeOf(r) !== o.dtype || r.length !== elementCount(o.shape)) {
        const what = ArrayBuffer.isView(r) ? `${r.length} ${dtypeOf(r)}` : typeof r;
        throw new FarmError("INVALID_ARGUMENT", `measure: the reference function of candidate ${id} returned ${what} for output ${k}, which is ${elementCount(o.shape)} ${o.dtype}`);
      }
    });
    let k = 0;
    return c.args.map((a) => ("output" in a ? got[k++] : undefined));
  }
}

function pick(o: { outcome: MeasureOutcome; message: string }): { outcome: MeasureOutcome; message: string } {
  return { outcome: o.outcome, message: o.message };
}

/** Awaits every promise (so none is left to reject unhandled) and throws the first failure. */
async function allOrFirstError<T>(promises: readonly Promise<T>[]): Promise<T[]> {
  const settled = await Promise.allSettled(promises);
  for (const s of settled) if (s.status === "rejected") throw s.reason;
  return settled.map((s) => (s as PromiseFulfilledResult<T>).value);
}

/**
 * One board's session for a whole batch: modules uploaded once, and arrays
 * kept between candidates (by dtype and shape) so that a candidate usually
 * costs one round trip — its inputs' copies and the Measure request are sent
 * together, and the board serves a session's frames in order. Outputs need
 * no reset: the board poisons them before every check.
 */
class BoardSession {
  /** Modules uploaded and loaded (or on their way), by digest. */
  private readonly modules = new Map<string, Promise<RemoteModule>>();
  /** References too large to travel inline, held as arrays of the session (References memoises them, so one object is one reference). */
  private readonly heldReferences = new WeakMap<AnyTypedArray, Promise<RemoteArray>>();
  private readonly spare = new Map<string, RemoteArray[]>();

  /** The launch limits the board registered (a CUDA board), read once. */
  private readonly limits: CudaLaunchLimits | undefined;

  constructor(readonly session: Session) {
    this.limits = cudaLaunchLimitsFrom(session.board.capabilities);
  }

  /**
   * Why candidate `c`, built as `module`, cannot launch on this board: its
   * kernel's resources as ptxas reported them (a CUDA module compiled on this
   * host) against the limits the board registered. Undefined when it can, or
   * when that cannot be told here (no launch, no report, a board that does not
   * say its limits): the board's own launch check then decides.
   */
  launchRefusal(module: CompiledModule, c: Candidate): string | undefined {
    const resources = (module as { resources?: Record<string, KernelResources> }).resources?.[c.function];
    if (!c.launch || !resources || !this.limits) return undefined;
    let launch;
    try {
      launch = toLaunchConfig(c.launch, `candidate ${c.id ?? ""}`);
    } catch {
      return undefined; // a malformed launch: the board names it
    }
    const problem = cudaLaunchProblem(c.function, resources, launch, this.limits);
    return problem && `${problem} (told on the host against board ${this.session.board.id}'s registered limits, with ptxas's report of the kernel; nothing was uploaded)`;
  }

  /**
   * Sends `module`'s upload and load now, unless already sent. Called with
   * the next candidate's module right after a Measure request went out, its
   * bytes travel while the board measures.
   */
  prefetch(module: CompiledModule): Promise<RemoteModule> {
    let loaded = this.modules.get(module.digest);
    if (!loaded) {
      loaded = allOrFirstError<unknown>([this.session.upload(module), this.session.loadModule(module.name)]).then((r) => r[1] as RemoteModule);
      // A failure is the result of the candidate that needs it (and a later one tries again).
      loaded.catch(() => this.modules.delete(module.digest));
      this.modules.set(module.digest, loaded);
    }
    return loaded;
  }

  /**
   * One candidate: its arguments, the Measure request, and — while `again`
   * flags the result — more timings of it, with the same module and arrays
   * (nothing uploaded or copied again) and without the checks: the answer
   * was checked before and after the first timing, on this board.
   */
  /**
   * A reference over one chunk as an array of this session, copied once for
   * every candidate that shares it: the Measure request must fit in one
   * message, and a 4096² float32 output alone is 64 MiB. Undefined: it
   * travels inline.
   */
  private held(expect: AnyTypedArray): Promise<RemoteArray | undefined> {
    if (expect.byteLength <= CHUNK_BYTES) return Promise.resolve(undefined);
    let held = this.heldReferences.get(expect);
    if (!held) {
      held = this.session.array(expect);
      held.catch(() => this.heldReferences.delete(expect));
      this.heldReferences.set(expect, held);
    }
    return held;
  }

  async run(
    module: CompiledModule,
    c: Candidate,
    expects: readonly (AnyTypedArray | undefined)[],
    opts: MeasureOptions,
    measureSent?: () => void,
    again?: { times: number; when: (r: Measured) => boolean },
  ): Promise<Measured> {
    const s = this.session;
    const loading = this.prefetch(module);
    const taken: { key: string; array: RemoteArray }[] = [];
    const pending: Promise<unknown>[] = [];
    // A copy of more than one chunk may yield between chunks (back-pressure): then it must finish before the Measure request goes out.
    let copiesMustFinish = false;
    const args = c.args.map((a): RemoteArray | number | Promise<RemoteArray> => {
      if ("scalar" in a) return a.scalar;
      const dtype = "input" in a ? dtypeOf(a.input) : "random" in a ? a.dtype : a.output.dtype;
      const shape = "input" in a ? (a.shape ?? [a.input.length]) : "random" in a ? a.shape : a.output.shape;
      const key = `${dtype}[${shape.join(",")}]`;
      const reused = this.spare.get(key)?.pop();
      if (reused) {
        taken.push({ key, array: reused });
        if ("input" in a) {
          pending.push(reused.copyFrom(a.input));
          if (a.input.byteLength > CHUNK_BYTES) copiesMustFinish = true;
        } else if ("random" in a) {
          // Again at every candidate: the last one may have written into its inputs.
          pending.push(reused.fill(a.random));
        }
        return reused;
      }
      const made = "input" in a ? s.array(a.input, a.shape) : "random" in a ? s.array({ shape, dtype, random: a.random }) : s.array(a.output);
      pending.push(made.then((array) => taken.push({ key, array })));
      return made;
    });
    try {
      const ready = await allOrFirstError<RemoteArray | number>(args.map((a) => Promise.resolve(a)));
      if (copiesMustFinish) await allOrFirstError(pending);
      const remote = await loading;
      const checks = await Promise.all(
        expects.flatMap((expect, i) => (expect ? [this.held(expect).then((held) => ({ array: ready[i] as RemoteArray, expect: held ?? expect, atol: c.atol ?? 0, rtol: c.rtol ?? 0 }))] : [])),
      );
      const timeOpts: TimeEvaluatorOptions = { number: 10, repeat: 3, ...opts.timeEvaluator, timeoutMs: opts.timeoutMs ?? 10_000, launch: c.launch };
      const measuring = s.measureCall(remote, c.function, ready, checks, timeOpts);
      measureSent?.();
      const [m] = (await allOrFirstError<unknown>([measuring, ...pending])) as [Awaited<ReturnType<Session["measureCall"]>>];
      let r = measuredResult(m, s.board.id);
      if (!again || r.outcome !== "OK") return r;
      let measurements = 1;
      let flagged = again.when(r);
      while (flagged && measurements <= again.times) {
        r = measuredResult(await s.measureCall(remote, c.function, ready, [], timeOpts), s.board.id);
        measurements++;
        flagged = again.when(r);
      }
      return { ...r, ...(measurements > 1 ? { measurements } : {}), ...(flagged ? { flagged } : {}) };
    } finally {
      await Promise.allSettled(pending);
      for (const { key, array } of taken) {
        if (!this.spare.has(key)) this.spare.set(key, []);
        this.spare.get(key)!.push(array);
      }
    }
  }
}

/** What one Measure request gave a candidate: its result but for who it was and how many sessions it took. */
type Measured = Omit<MeasureResult, "index" | "id" | "attempts">;

function measuredResult(m: Awaited<ReturnType<Session["measureCall"]>>, board: string): Measured {
  const t = m.time && {
    results: [...m.time.results], mean: m.time.mean, median: m.time.median, min: m.time.min, max: m.time.max, std: m.time.std, number: m.time.number,
    // The precision achieved (Infinity, with one repeat, is not JSON: left out), and why the timing stopped when a target was given.
    ...(Number.isFinite(m.time.rse) ? { rse: m.time.rse } : {}),
    ...(m.time.stoppedBy !== "repeat" ? { stoppedBy: m.time.stoppedBy } : {}),
  };
  if (m.wrong) return { outcome: "WRONG_ANSWER", message: m.wrong, board, ...(t ? { timing: t } : {}) };
  const throttled = m.time!.throttled;
  return { outcome: "OK", timing: t!, stats: m.counters, board, conditions: { ...m.time!.conditions }, ...(throttled !== undefined ? { throttled } : {}) };
}

/** Results already in the file, by candidate id (later lines win; a torn last line is ignored). */
function readResults(path: string | undefined): Map<string, MeasureResult> {
  const out = new Map<string, MeasureResult>();
  if (!path || !existsSync(path)) return out;
  for (const line of readFileSync(path, "utf8").split("\n")) {
    if (!line.trim()) continue;
    try {
      const r = JSON.parse(line) as MeasureResult;
      if (typeof r.id !== "string" || !(MEASURE_OUTCOMES as readonly string[]).includes(r.outcome)) continue;
      // A line written without the flag (the Python SDK's) still has the conditions it comes from.
      const throttled = r.outcome === "OK" ? (r.throttled ?? throttledOf(r.conditions)) : undefined;
      out.set(r.id, throttled === undefined ? r : { ...r, throttled });
    } catch {
      // a line cut short by a crash: that candidate is measured again
    }
  }
  return out;
}
