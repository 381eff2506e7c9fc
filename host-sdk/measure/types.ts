/** What measure() takes and gives: candidates, options, results, and the closed set of outcomes. */
import { DEFAULT_INFRA_DEADLINE_MS, DEFAULT_RETRIES, MEASURE_OUTCOMES } from "../../protos/gen/contract.ts";
import type { AnyTypedArray, Dtype, LaunchDecl } from "../../protos/index.ts";
import type { RandomFill } from "../../domain/index.ts";
import type { CompiledModule } from "../compiled-module.ts";
import type { TimeEvaluatorOptions } from "../session.ts";

/** The closed set of outcomes, each with what it means: declared once for both SDKs, in protos/farm/v1/contract.json. */
export { MEASURE_OUTCOMES };
export type MeasureOutcome = (typeof MEASURE_OUTCOMES)[number];

/**
 * One kernel argument: data sent from the host, data generated on the board
 * from a seed (domain/random.ts; nothing crosses the network), an output to
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
  /**
   * What defines the module before it is built — its source and compile
   * options, any JSON data. A resume matches a results-file line by id and a
   * digest of the candidate (docs/measure.md); with a definition that digest
   * needs no compile, without one a module given as a function is built
   * again on resume to learn its bytes' digest.
   */
  definition?: unknown;
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
  /**
   * Times a candidate is measured again after its session failed under it
   * (the board's agent died, the session was lost). Default 3. Failures to
   * obtain a session (the tracker restarting, no free board) do not count:
   * they are waited out, up to `infraDeadlineMs`.
   */
  retries?: number;
  /**
   * How long infrastructure failures are waited out before a candidate is
   * recorded as INFRA_ERROR: from its first such failure, or from the start
   * of an outage for a batch that cannot reach the farm at all. Default
   * DEFAULT_INFRA_DEADLINE_MS (10 minutes: a tracker or agent restart, with
   * room to spare).
   */
  infraDeadlineMs?: number;
  /** Host compiles at once. Default: the host's cores (os.availableParallelism()). */
  compileParallelism?: number;
  /**
   * Candidates compiled (or compiling) ahead of the boards. Default: chosen
   * as the batch runs, to cover the slowest compile seen at the boards'
   * rate, at least every compile slot and two per board.
   */
  queueDepth?: number;
  /**
   * Candidates sent to one board before the previous one's answer arrives.
   * The board serves a session's requests in order, so a second waits
   * behind the first (its timing undisturbed) and starts without a host
   * round trip. Default 1: see DEFAULT_IN_FLIGHT_PER_BOARD for why a second
   * is opt-in.
   */
  inFlightPerBoard?: number;
  /** Called once per batch, when it ends, with how busy each board was (`Measurer.lastReport` keeps it too). */
  onReport?: (report: MeasureReport) => void;
  /** JSON-lines results file: appended per candidate; candidates already in it are skipped. */
  resultsFile?: string;
  /** Called with each result as it is recorded (after its results-file line), in completion order: a search can act before the batch ends. */
  onResult?: (result: MeasureResult) => void;
  /** Progress line on stderr: default when stderr is a terminal. */
  progress?: boolean;
  /** How long one session request waits for a free board, and a batch for its key to be served at all. Default 60 s. */
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
  /** The candidate's digest (docs/measure.md): what a resume matches besides the id. Absent for a COMPILE_ERROR of a module built without a `definition`. */
  digest?: string;
  /** Why a candidate that had a line in the results file was measured again. */
  measuredAgain?: string;
}

/** Default `infraDeadlineMs` and `retries` (sessions that may fail under one candidate before it is INFRA_ERROR), declared for both SDKs. */
export { DEFAULT_INFRA_DEADLINE_MS, DEFAULT_RETRIES };
/**
 * Default `inFlightPerBoard`: 1. With two, the good candidate before a
 * crashing or hanging one was charged with its failure on the grpc route in
 * full `npm test` runs (tests/measure.test.ts, a `todo`): its answer never
 * reached the host. On that route the answer travels on the session's
 * ServeSession stream and the worker's death on its agent's Attach stream,
 * two connections whose order the tracker does not keep (a reading, not
 * confirmed). Never seen on the direct lane. A second slot is opt-in until then.
 */
export const DEFAULT_IN_FLIGHT_PER_BOARD = 1;

/**
 * Candidates pulled one at a time, as the pipeline has room: a search
 * proposes each with the latest results in hand (`onResult`) instead of a
 * round at a time. `next()` resolving to undefined ends the batch.
 */
export interface CandidateSource {
  next(): Candidate | undefined | Promise<Candidate | undefined>;
  /** How many it will give, when known (for the progress line). */
  readonly total?: number;
}

/** Seconds one board spent idle, by what it waited for. */
export interface IdleTime {
  /** No candidate compiled yet: the host's compiler is behind. */
  compile: number;
  /** The host's own work: the search proposing, reference outputs being computed. */
  host: number;
  /** Uploads and array copies before a Measure request could go out. */
  transfer: number;
  /** Obtaining a session: the tracker's grant, or waiting out an outage. */
  session: number;
  /** Nothing left to take while other boards finish the batch's last candidates. */
  tail: number;
}

/** One board's share of a batch. */
export interface BoardReport {
  /** The boards it used, in order (more than one after a lost session). */
  boards: string[];
  candidates: number;
  /** Fraction of the batch's seconds with a Measure request outstanding on the board. */
  busy: number;
  idle: IdleTime;
  candidatesPerSecond: number;
}

/** How a batch used the farm: measure()'s `onReport` and `Measurer.lastReport`. */
export interface MeasureReport {
  seconds: number;
  /** Results recorded by this batch (not counting those reused from the results file). */
  candidates: number;
  /** Results taken from the results file. */
  reused: number;
  candidatesPerSecond: number;
  /** Mean busy fraction over the boards. */
  busy: number;
  compileParallelism: number;
  /** The queue depth it ended with (chosen as it ran, unless given). */
  queueDepth: number;
  inFlightPerBoard: number;
  compiles: { count: number; medianSeconds: number; maxSeconds: number };
  boards: BoardReport[];
}
