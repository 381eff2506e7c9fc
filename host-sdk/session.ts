/**
 * A session on one board: the TVM `remote` object. Files, modules, arrays,
 * calls and timing, over a FrameChannel. Requests are pipelined on one open
 * stream through the Multiplexer (host-sdk/multiplexer.ts), which matches
 * each reply to its request by id.
 */
import { readFile } from "node:fs/promises";
import { basename } from "node:path";
import {
  CHUNK_BYTES,
  DTYPES,
  FarmError,
  checkOption,
  checkOptions,
  dtypeBytes,
  dtypeOf,
  elementCount,
  isDtype,
  toLaunchConfig,
  viewAs,
  type AnyTypedArray,
  type BoardFrame__Output,
  type Dtype,
  type Lane,
  type LaunchDecl,
} from "../protos/index.ts";
import { fillProblem, fillRange, type RandomFill } from "../domain/index.ts";
import type { Call } from "../protos/gen/farm/v1/Call.ts";
import type { BoardInfo__Output } from "../protos/index.ts";
import type { FunctionInfo__Output } from "../protos/gen/farm/v1/FunctionInfo.ts";
import type { Arg } from "../protos/gen/farm/v1/Arg.ts";
import { BenchmarkResult, type StoppedBy } from "./benchmark-result.ts";
import type { FrameChannel } from "./frame-channel.ts";
import { Multiplexer, type Op } from "./multiplexer.ts";
import type { CompiledModule } from "./compiled-module.ts";
import { hashTree } from "./tree-hasher.ts";
import { SessionUploads, dedupePlan, noteHash, noteTransfer } from "./dedupe-plan.ts";
import { shown } from "./options.ts";

/**
 * TVM's time_evaluator options. Each numeric one takes the range that
 * protos/farm/v1/contract.json declares for both SDKs ("optionLimits"); a
 * value outside it is INVALID_ARGUMENT when the evaluator is made, before
 * anything is sent.
 */
export interface TimeEvaluatorOptions {
  /** Calls per repeat (grows to reach minRepeatMs). Default 10. */
  number?: number;
  /** Repeats, each one result. Default 1. */
  repeat?: number;
  /** Grow `number` until one repeat lasts this long. Default 0. */
  minRepeatMs?: number;
  /** Sleep after repeats (see repeatsToCooldown). Default 0. */
  cooldownMs?: number;
  /** Sleep after repeat i when i % repeatsToCooldown == 0. Default 1. */
  repeatsToCooldown?: number;
  /** Stop growing after this many 0 ns measurements. Default 100. */
  limitZeroTimeIterations?: number;
  /**
   * A precision target: after `repeat` repeats, more until the median's
   * relative standard error (BenchmarkResult.rse) is at most this, e.g.
   * 0.01 — or `budgetMs` ends. Default 0: exactly `repeat` repeats.
   */
  targetRse?: number;
  /** With targetRse: stop adding repeats after this long. Default 5000 ms; within the call's timeout. */
  budgetMs?: number;
  /** Per-evaluation timeout on the board; default the board's call timeout. */
  timeoutMs?: number;
  /** CUDA: the launch configuration, for kernels compiled without one (or to override it). */
  launch?: LaunchDecl;
  /** CUDA: overwrite the L2 cache before every repeat, so each repeat starts cold. */
  flushL2?: boolean;
  /** CUDA: capture the `number` launches as a CUDA graph once and time its replays (for tiny kernels, where launch overhead dominates). */
  graph?: boolean;
  /**
   * CPU: before every timed batch, evict every array argument but the first
   * from every cache level — TVM's cache_flush_cpu_non_first_arg, autotvm's
   * enable_cpu_cache_flush (the first is the data input, which an end-to-end
   * run would find warm from the layer before; weights and the rest are cold).
   */
  flushCpuCache?: boolean;
}

export type ScalarArg = number | bigint;
export type CallArg = RemoteArray | ScalarArg;

export interface CallOptions {
  timeoutMs?: number;
  /** CUDA: the launch configuration, for kernels compiled without one (or to override it). */
  launch?: LaunchDecl;
}

export class RemoteArray {
  private freed = false;
  constructor(
    private readonly session: Session,
    readonly id: number,
    readonly shape: readonly number[],
    readonly dtype: Dtype,
    readonly nbytes: number,
  ) {}

  /** Copies host data into the array (same byte length). */
  async copyFrom(data: AnyTypedArray | Uint8Array): Promise<void> {
    const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    if (bytes.byteLength !== this.nbytes) {
      throw new FarmError(
        "BAD_ARGUMENTS",
        `copyFrom: array ${this.id} holds ${this.nbytes} bytes ([${this.shape.join(", ")}] ${this.dtype}), got ${bytes.byteLength}`,
      );
    }
    await this.session.sendChunked(bytes, (chunk, offset, done) => ({ array_write: { array: this.id, offset, data: chunk, done } }));
  }

  /**
   * Fills the array on the board from a seed (domain/random.ts): no bytes
   * cross the network, and `randomArray(dtype, n, fill)` gives the host the
   * same contents for its reference.
   */
  async fill(fill: RandomFill): Promise<void> {
    const problem = fillProblem(this.dtype, fill);
    if (problem) throw new FarmError("BAD_ARGUMENTS", `fill: array ${this.id} ([${this.shape.join(", ")}] ${this.dtype}): ${problem}`);
    await this.session.request({ array_fill: { array: this.id, seed: fill.seed, ...fillRange(this.dtype, fill), integers: fill.integers ?? false } });
  }

  /** The array's contents as a typed array of its dtype. */
  async toArray(): Promise<AnyTypedArray> {
    const bytes = await this.session.fetchChunked({ array_read: { array: this.id } });
    return viewAs(this.dtype, bytes);
  }

  async free(): Promise<void> {
    if (this.freed) return;
    this.freed = true;
    await this.session.request({ array_free: { array: this.id } });
  }
}

export class RemoteModule {
  constructor(
    private readonly session: Session,
    readonly id: number,
    readonly target: string,
    readonly functions: readonly FunctionInfo__Output[],
  ) {}

  private info(name: string): FunctionInfo__Output {
    const fn = this.functions.find((f) => f.name === name);
    if (!fn) throw new FarmError("UNKNOWN_FUNCTION", `module ${this.id} has no function "${name}"; it has: ${this.functions.map((f) => f.name).join(", ")}`);
    return fn;
  }

  /** An awaitable handle on one function: `await fn(a, b, c, n)`. */
  getFunction(name: string): RemoteFunction {
    const info = this.info(name);
    const fn = ((...args: CallArg[]) => this.session.call(this.id, info, args)) as RemoteFunction;
    Object.defineProperties(fn, {
      info: { value: info },
      withOptions: {
        value:
          (opts: CallOptions) =>
          (...args: CallArg[]) =>
            this.session.call(this.id, info, args, opts),
      },
    });
    return fn;
  }

  /** TVM's module.time_evaluator: returns an evaluator to call with the arguments. */
  timeEvaluator(name: string, opts: TimeEvaluatorOptions = {}): (...args: CallArg[]) => Promise<BenchmarkResult> {
    const info = this.info(name);
    // Refused here, where the options are given, rather than at the first evaluation.
    checkOptions("timeEvaluator", opts);
    let number = opts.number ?? 10;
    return async (...args: CallArg[]) => {
      const result = await this.session.timeEvaluate(this.id, info, args, { ...opts, number });
      // As in TVM, the grown `number` persists into later evaluations of this evaluator.
      number = result.number;
      return result;
    };
  }
}

export interface RemoteFunction {
  (...args: CallArg[]): Promise<void>;
  readonly info: FunctionInfo__Output;
  withOptions(opts: CallOptions): (...args: CallArg[]) => Promise<void>;
}

export class Session {
  private readonly mux: Multiplexer;
  private closing: Promise<void> | undefined;
  private readonly modules: RemoteModule[] = [];
  /** What this session put on its board by digest: the same bytes again are taken from there. */
  private readonly uploads = new SessionUploads();

  /** How the session's frames travel: direct | relay | grpc (local: in process). */
  readonly lane: Lane | "local";
  /** Why an auto-routed session did not get the direct lane, when it fell back. */
  readonly laneNote: string | undefined;

  constructor(
    readonly id: string,
    readonly board: BoardInfo__Output,
    channel: FrameChannel,
    how: { lane: Lane | "local"; laneNote?: string } = { lane: "local" },
  ) {
    this.lane = how.lane;
    this.laneNote = how.laneNote;
    this.mux = new Multiplexer(channel, id);
  }

  /** Why the session ended, once it has. */
  get closedReason(): FarmError | undefined {
    return this.mux.endReason;
  }

  get isClosed(): boolean {
    return this.mux.endReason !== undefined;
  }

  /** @internal One request, one reply. */
  request(op: Op): Promise<BoardFrame__Output> {
    return this.mux.request(op);
  }

  /** @internal Sends `bytes` in chunks under one request id; one reply at the end. */
  sendChunked(bytes: Uint8Array, op: (chunk: Uint8Array, offset: number, done: boolean) => Op | Promise<Op>): Promise<BoardFrame__Output> {
    return this.mux.sendChunked(bytes, op);
  }

  /** @internal A request whose reply comes in chunks; resolves to the assembled bytes. */
  fetchChunked(op: Op): Promise<Buffer> {
    return this.mux.fetchChunked(op);
  }

  // --- files

  /**
   * Sends a file into the session's folder, as `name` (default: the file's
   * or module's own name). A module travels with its digest: a board whose
   * agent has held those bytes before (in any session) takes them from its
   * store instead — for more than one frame of bytes (1 MiB) the host asks
   * first, one round trip. `dedupe: true` does the same for other bytes, at
   * the price of hashing them here: by their tree digest (domain/tree-digest.ts),
   * on worker threads (tree-hasher.ts). Where this board's lane has been seen
   * to carry bytes faster than they hash, they are sent at once instead,
   * hashed meanwhile, with the digest on the last frame (dedupe-plan.ts).
   * When it pays: docs/architecture.md, "Uploads by digest".
   */
  async upload(source: Uint8Array | string | CompiledModule, name?: string, opts: { dedupe?: boolean } = {}): Promise<string> {
    let bytes: Uint8Array;
    let target: string;
    let digest: { sha256: string } | { tree_sha256: string } | undefined;
    if (typeof source === "string") {
      bytes = await readHostFile(source);
      target = name ?? basename(source);
    } else if (source instanceof Uint8Array) {
      // Only a missing name is the caller's slip here; a bad one ("", "a/b") is the board's INVALID_NAME.
      if (name === undefined) throw new FarmError("INVALID_ARGUMENT", "upload(bytes) needs a name");
      bytes = source;
      target = name;
    } else {
      bytes = source.bytes;
      target = name ?? source.name;
      digest = { sha256: source.digest };
    }
    sendableName(target);
    const link = `${this.board.id}|${this.lane}`;
    const size = bytes.byteLength;
    // Bytes to dedupe on a lane faster than hashing: sent now, hashed meanwhile, the digest on the last frame.
    let late: Promise<{ tree_sha256: string }> | undefined;
    if (opts.dedupe && !digest) {
      const hashing = this.timedHash(link, bytes);
      if (size > CHUNK_BYTES && !this.uploads.mayHold(size) && dedupePlan(link, size) === "send") late = hashing;
      else digest = await hashing;
    }
    // Ask first whether the board holds them: for more than one frame of bytes (one round trip against the
    // transfer), and for any this session put there.
    if (digest && (size > CHUNK_BYTES || this.uploads.holds(digestKey(digest)))) {
      try {
        await this.request({ upload: { name: target, total_bytes: size, data: new Uint8Array(0), done: true, ...digest, probe: true } });
        this.uploads.placed(digestKey(digest), size);
        return target;
      } catch (err) {
        if (!(err instanceof FarmError && err.code === "NOT_FOUND")) throw err;
      }
    }
    const t0 = performance.now();
    const frame = (chunk: Uint8Array, offset: number, done: boolean, last?: { tree_sha256: string }): Op => ({
      upload: { name: target, total_bytes: bytes.byteLength, data: chunk, done, ...(offset === 0 && digest ? digest : {}), ...last },
    });
    // Synchronous but for a last frame that waits for its digest: the first frame must go out before upload() yields.
    await this.sendChunked(bytes, (chunk, offset, done) => (done && late ? late.then((d) => frame(chunk, offset, done, d)) : frame(chunk, offset, done)));
    noteTransfer(link, size, performance.now() - t0);
    const sent = digest ?? (await late);
    if (sent) this.uploads.placed(digestKey(sent), size);
    return target;
  }

  private async timedHash(link: string, bytes: Uint8Array): Promise<{ tree_sha256: string }> {
    const t0 = performance.now();
    const tree_sha256 = await hashTree(bytes);
    noteHash(link, bytes.byteLength, performance.now() - t0);
    return { tree_sha256 };
  }

  async download(name: string): Promise<Buffer> {
    return this.fetchChunked({ download: { name: sendableName(name) } });
  }

  async listdir(): Promise<Array<{ name: string; size: number }>> {
    const r = await this.request({ listdir: {} });
    return r.listing!.entries.map((e) => ({ name: e.name, size: e.size }));
  }

  async remove(name: string): Promise<void> {
    await this.request({ remove: { name: sendableName(name) } });
  }

  // --- modules and calls

  async loadModule(name: string): Promise<RemoteModule> {
    const r = await this.request({ load_module: { name: sendableName(name) } });
    const m = r.module!;
    const module = new RemoteModule(this, m.module, m.target, m.functions);
    this.modules.push(module);
    return module;
  }

  private args(info: FunctionInfo__Output, args: readonly CallArg[]): Arg[] {
    return args.map((a, i) => {
      if (a instanceof RemoteArray) return { array: a.id };
      const p = info.params[i];
      const float = p?.dtype.startsWith("float");
      if (typeof a === "bigint") return { int_value: Number(a) };
      if (typeof a !== "number") throw new FarmError("BAD_ARGUMENTS", `argument ${i} of ${info.name} must be a RemoteArray or a number, got ${typeof a}`);
      return float || !Number.isInteger(a) ? { float_value: a } : { int_value: a };
    });
  }

  /** @internal */
  async call(module: number, info: FunctionInfo__Output, args: readonly CallArg[], opts: CallOptions = {}): Promise<void> {
    await this.request({ call: this.callFrame(module, info, args, opts) });
  }

  private callFrame(module: number, info: FunctionInfo__Output, args: readonly CallArg[], opts: CallOptions): Call {
    if (opts.timeoutMs !== undefined) checkOption("call", "timeoutMs", opts.timeoutMs);
    const launch = opts.launch && toLaunchConfig(opts.launch, `call of ${info.name}`);
    return {
      module,
      function: info.name,
      args: this.args(info, args),
      timeout_ms: opts.timeoutMs ?? 0,
      ...(launch ? { launch: { grid: launch.grid, block: launch.block, shared_mem_bytes: launch.sharedMemBytes } } : {}),
    };
  }

  /** @internal */
  async timeEvaluate(module: number, info: FunctionInfo__Output, args: readonly CallArg[], opts: TimeEvaluatorOptions): Promise<BenchmarkResult> {
    const r = await this.request({ time_evaluate: this.timeFrame(module, info, args, opts) });
    const t = r.time!;
    return new BenchmarkResult(t.results_s, t.number, t.conditions, stoppedBy(t.stopped_by));
  }

  /**
   * measure()'s board side in one request (see host-sdk/measure/board-session.ts): checks
   * before and after a time evaluation; `wrong` names the first mismatch.
   * @internal
   */
  async measureCall(
    module: RemoteModule,
    fnName: string,
    args: readonly CallArg[],
    checks: readonly { array: RemoteArray; expect: AnyTypedArray | RemoteArray; atol: number; rtol: number }[],
    opts: TimeEvaluatorOptions,
  ): Promise<{ time?: BenchmarkResult; wrong: string; counters: Record<string, number> }> {
    const info = module.functions.find((f) => f.name === fnName);
    if (!info)
      throw new FarmError("UNKNOWN_FUNCTION", `module ${module.id} has no function "${fnName}"; it has: ${module.functions.map((f) => f.name).join(", ")}`);
    const r = await this.request({
      measure: {
        time: this.timeFrame(module.id, info, args, opts),
        checks: checks.map((k) => ({
          array: k.array.id,
          ...(k.expect instanceof RemoteArray
            ? { expect_array: k.expect.id }
            : { expect: new Uint8Array(k.expect.buffer, k.expect.byteOffset, k.expect.byteLength) }),
          atol: k.atol,
          rtol: k.rtol,
        })),
      },
    });
    const m = r.measured!;
    return {
      time: m.time ? new BenchmarkResult(m.time.results_s, m.time.number, m.time.conditions, stoppedBy(m.time.stopped_by)) : undefined,
      wrong: m.wrong,
      counters: { ...m.counters },
    };
  }

  private timeFrame(module: number, info: FunctionInfo__Output, args: readonly CallArg[], opts: TimeEvaluatorOptions) {
    // Every path to a time_evaluate or measure frame, measure()'s included: a value outside the table's limits never reaches the board.
    checkOptions("timeEvaluator", opts);
    return {
      call: this.callFrame(module, info, args, opts),
      number: opts.number ?? 10,
      repeat: opts.repeat ?? 1,
      min_repeat_ms: opts.minRepeatMs ?? 0,
      cooldown_ms: opts.cooldownMs ?? 0,
      repeats_to_cooldown: opts.repeatsToCooldown ?? 1,
      limit_zero_time_iterations: opts.limitZeroTimeIterations ?? 100,
      flush_l2: opts.flushL2 ?? false,
      flush_cpu_cache: opts.flushCpuCache ?? false,
      graph: opts.graph ?? false,
      target_rse: opts.targetRse ?? 0,
      budget_ms: opts.budgetMs ?? 0,
    };
  }

  /**
   * TVM's time_evaluator by function name, looked up in the modules this
   * session loaded (the most recent first).
   */
  timeEvaluator(fnName: string, opts: TimeEvaluatorOptions = {}): (...args: CallArg[]) => Promise<BenchmarkResult> {
    const module = [...this.modules].reverse().find((m) => m.functions.some((f) => f.name === fnName));
    if (!module) throw new FarmError("UNKNOWN_FUNCTION", `no module loaded in session ${this.id} has a function "${fnName}"`);
    return module.timeEvaluator(fnName, opts);
  }

  // --- arrays

  /** A remote array: from host data (copied in), empty of a shape and dtype, or filled on the board from a seed (`random`, see RemoteArray.fill). */
  async array(init: AnyTypedArray | { shape: readonly number[]; dtype: Dtype; random?: RandomFill }, shape?: readonly number[]): Promise<RemoteArray> {
    const isData = ArrayBuffer.isView(init);
    const dtype = arrayDtype(init);
    const dims = [...(shape ?? (isData ? [(init as AnyTypedArray).length] : (init as { shape: readonly number[] }).shape))];
    // Dimensions travel as uint32: a larger one would silently wrap.
    const bad = dims.find((d) => !Number.isInteger(d) || d < 0 || d > 0xffff_ffff);
    if (bad !== undefined)
      throw new FarmError("BAD_ARGUMENTS", `shape [${dims.join(", ")}]: ${bad} is not a dimension (integers 0 … 4294967295; split a larger one)`);
    if (isData && elementCount(dims) * dtypeBytes(dtype) !== (init as AnyTypedArray).byteLength) {
      throw new FarmError("BAD_ARGUMENTS", `shape [${dims.join(", ")}] does not match ${(init as AnyTypedArray).length} elements`);
    }
    const r = await this.request({ array_alloc: { shape: dims, dtype } });
    const array = new RemoteArray(this, r.array!.array, dims, dtype, r.array!.nbytes);
    if (isData && array.nbytes > 0) await array.copyFrom(init as AnyTypedArray);
    const random = isData ? undefined : (init as { random?: RandomFill }).random;
    if (random) await array.fill(random);
    return array;
  }

  // --- stats and lifetime

  async stats(): Promise<{ counters: Record<string, number>; info: Record<string, string> }> {
    const r = await this.request({ stats: {} });
    return { counters: { ...r.stats!.counters }, info: { ...r.stats!.info } };
  }

  async clearStats(): Promise<void> {
    await this.request({ clear_stats: {} });
  }

  /**
   * What this session's kernels printed (stdout and stderr, as the board's
   * agent read them from the session's worker): the last 1 MiB since the
   * session began, as UTF-8 (bytes that are not become U+FFFD). Only this
   * session's own output; the agent's log shows it bounded and escaped.
   */
  async output(): Promise<string> {
    return new TextDecoder().decode(await this.fetchChunked({ output: {} }));
  }

  // --- the board itself

  /**
   * Loads a bitstream into this VTA board's FPGA, as TVM's
   * `vta.program_fpga(remote, bitstream)`: `bitstream` and `config` (its
   * companion, TVM's vta_config.json; default: the bitstream's path with
   * `.json` for `.bit`/`.bin`) are uploaded, the agent checks that the
   * configuration is the board's and loads the bitstream through the FPGA
   * manager, and the board's `bitstream` label becomes its SHA-256.
   */
  async programFpga(bitstream: string | Uint8Array, config?: string | Uint8Array): Promise<{ sha256: string; hardware: string }> {
    const companion = config ?? (typeof bitstream === "string" ? bitstream.replace(/\.(bit|bin)$/, "") + ".json" : undefined);
    if (companion === undefined)
      throw new FarmError("INVALID_ARGUMENT", "programFpga(bytes) needs the configuration too: the bytes of its vta_config.json, or its path");
    const b = await this.upload(bitstream, "kfarm-bitstream.bin");
    const c = await this.upload(companion, "kfarm-bitstream.json");
    const r = await this.request({ program_fpga: { bitstream: b, config: c } });
    return { sha256: r.programmed!.sha256, hardware: r.programmed!.hardware };
  }

  /**
   * Ends the session: resolves once the worker has closed it (on a socket
   * lane, its clean end; else the tracker's end). The tracker gives the board
   * back to the pool when the agent's report follows, a moment later. Safe
   * to call twice.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (!this.isClosed) {
        try {
          await this.request({ close: {} });
        } catch {
          // Already ending: the channel's close below settles it.
        }
        this.mux.end();
      }
      await this.mux.ended;
    })();
    return this.closing;
  }
}

const TYPED_ARRAYS = Object.values(DTYPES)
  .map((d) => d.array.name)
  .join(", ");
const ARRAY_INIT = `a typed array of the data (new Float32Array([1, 2, 3]); ${TYPED_ARRAYS}), or { shape, dtype } for an empty one (dtype: ${Object.keys(DTYPES).join(", ")})`;

/** The dtype of what `array()` was given; BAD_ARGUMENTS saying what it takes when it is neither of the two. */
function arrayDtype(init: unknown): Dtype {
  if (ArrayBuffer.isView(init)) {
    const kind = Object.values(DTYPES).find((d) => init instanceof d.array);
    if (kind) return dtypeOf(init as AnyTypedArray);
    throw new FarmError("BAD_ARGUMENTS", `array(): a ${init.constructor.name} holds no dtype a board holds; give it ${ARRAY_INIT}`);
  }
  if (Array.isArray(init)) throw new FarmError("BAD_ARGUMENTS", `array(): a plain array has no dtype; give it ${ARRAY_INIT}`);
  if (typeof init !== "object" || init === null) throw new FarmError("BAD_ARGUMENTS", `array(): got ${shown(init)}; give it ${ARRAY_INIT}`);
  const { dtype } = init as { dtype?: unknown };
  if (!isDtype(dtype)) {
    const got = dtype === undefined ? "no dtype" : `dtype ${shown(dtype)}, not one a board holds`;
    throw new FarmError("BAD_ARGUMENTS", `array(): { shape, dtype } with ${got}; give it ${ARRAY_INIT}`);
  }
  return dtype;
}

/** How SessionUploads names bytes: the two digests are kept apart, as the agent's store keeps them. */
function digestKey(digest: { sha256: string } | { tree_sha256: string }): string {
  return "sha256" in digest ? digest.sha256 : `tree-${digest.tree_sha256}`;
}

/** A file of this host to upload, its failures as FarmErrors naming the path and what to do. */
async function readHostFile(path: string): Promise<Uint8Array> {
  try {
    return await readFile(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT") throw new FarmError("NOT_FOUND", `upload(${JSON.stringify(path)}): no such file on this host`, { cause: err });
    if (code === "EISDIR")
      throw new FarmError("INVALID_ARGUMENT", `upload(${JSON.stringify(path)}): a directory; upload its files one by one (or an archive of it)`, {
        cause: err,
      });
    if (code === "EACCES" || code === "EPERM")
      throw new FarmError("INVALID_ARGUMENT", `upload(${JSON.stringify(path)}): this process may not read it (${code})`, { cause: err });
    throw new FarmError("INVALID_ARGUMENT", `upload(${JSON.stringify(path)}): cannot read it: ${(err as Error).message}`, { cause: err });
  }
}

function stoppedBy(wire: string): StoppedBy {
  return wire === "precision" || wire === "budget" || wire === "max_repeats" ? wire : "repeat";
}

/**
 * `name`, if UTF-8 can carry it. A string with a lone surrogate (half of a
 * pair, U+D800–U+DFFF) has no UTF-8 form: the encoder would send U+FFFD in
 * its place, and the board would store and list the file under a name the
 * caller never gave. Every other check of names is the board's, one rule for
 * every SDK (device-agent/worker/files.ts).
 */
function sendableName(name: string): string {
  if (typeof name === "string" && /\p{Cs}/u.test(name)) {
    throw new FarmError(
      "INVALID_NAME",
      `file name ${JSON.stringify(name.length > 40 ? `${name.slice(0, 40)}…` : name)} holds a lone surrogate (half of a UTF-16 pair), which UTF-8 cannot carry; names must be well-formed Unicode`,
    );
  }
  return name;
}
