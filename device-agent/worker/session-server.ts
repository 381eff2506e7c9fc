/**
 * Serves one session's frames on one board: files, modules, arrays, calls,
 * timing and stats. Frames are handled strictly in order; every request gets
 * a reply (or, for chunked reads, replies) with its id.
 */
import {
  CHUNK_BYTES, DTYPES, FarmError, viewAs, decodeBundle, decodeHostFrame, dtypeBytes, elementCount, encodeBoardFrame, fillProblem, integerRange, isDtype, launchProblem,
  type BoardFrame, type Dtype, type FarmErrorCode, type HostFrame__Output,
} from "../../protos/index.ts";
import type { Call__Output } from "../../protos/gen/farm/v1/Call.ts";
import type { TimeEvaluate__Output } from "../../protos/gen/farm/v1/TimeEvaluate.ts";
import type { ArgValue, Backend, CallSettings, DeviceArray, LoadedFunction, LoadedModule } from "../backends/index.ts";
import { SessionFiles, type FileLimits, type SessionStore } from "./files.ts";
import { seededBytes } from "./fills.ts";
import { evaluateTime, type TimeEvaluation } from "./time-evaluator.ts";

const NO_SETTINGS: CallSettings = Object.freeze({});
/** The board target each call setting belongs to. */
const SETTING_TARGETS: Record<keyof CallSettings, "cuda" | "cpu"> = { launch: "cuda", flushL2: "cuda", graph: "cuda", flushCpuCache: "cpu" };

/** Bytes no kernel is likely to produce: checked outputs are filled with them before each call. */
const POISON = 0xa5;

/** The first element of `got` outside |got − want| ≤ atol + rtol·|want|, described; or undefined. */
function firstMismatch(got: ArrayLike<number | bigint>, want: ArrayLike<number | bigint>, atol: number, rtol: number): string | undefined {
  for (let i = 0; i < got.length; i++) {
    const g = Number(got[i]!);
    const w = Number(want[i]!);
    if (!(Math.abs(g - w) <= atol + rtol * Math.abs(w))) return `element ${i} is ${g}, expected ${w}`;
  }
  return undefined;
}
import type { Watchdog } from "./watchdog.ts";

export interface SessionLimits extends FileLimits {
  /** Per-call timeout when the host gives none. */
  callTimeoutMs: number;
}

/** Optional observers of a session: the call watchdog, and who wants to know when foreign code is loaded. */
export interface SessionHooks {
  watchdog?: Watchdog;
  /** The backend became tainted (foreign code loaded): its process must not serve another session. */
  onTainted?: () => void;
  /** Facts about the serving process, added to every stats reply. */
  info?: Record<string, string>;
  /** Where calls, time evaluations and their errors are counted (a worker keeps one across its sessions). */
  counters?: RequestCounters;
  /** The agent's store of uploaded files by digest (none: every upload is sent in full). */
  store?: SessionStore;
}

/** Counts since the last `take()`: what a worker reports to its agent's metrics. */
export interface RequestCounts {
  calls: number;
  timeEvaluations: number;
  /** Failed calls and time evaluations, by FarmError code. */
  errors: Partial<Record<FarmErrorCode, number>>;
}

/**
 * Calls, time evaluations and their errors, counted on the request path with
 * an integer increment each (no allocation); `take()` hands over what
 * accumulated and starts again from zero.
 */
export class RequestCounters {
  calls = 0;
  timeEvaluations = 0;
  private errors: Partial<Record<FarmErrorCode, number>> = {};
  private anyError = false;

  /** A call or time evaluation failed with `code`. */
  failed(code: FarmErrorCode): void {
    this.errors[code] = (this.errors[code] ?? 0) + 1;
    this.anyError = true;
  }

  /** What was counted since the last take, and zero again; undefined when nothing was. */
  take(): RequestCounts | undefined {
    if (this.calls === 0 && this.timeEvaluations === 0 && !this.anyError) return undefined;
    const counts = { calls: this.calls, timeEvaluations: this.timeEvaluations, errors: this.errors };
    this.calls = 0;
    this.timeEvaluations = 0;
    if (this.anyError) {
      this.errors = {};
      this.anyError = false;
    }
    return counts;
  }
}

/** Where replies go; `send` returns false when the caller should wait for `drained`. */
export interface FrameSink {
  send(frame: Uint8Array): boolean;
  drained(): Promise<void>;
}

interface RemoteArrayState {
  array: DeviceArray;
  dtype: Dtype;
  shape: number[];
}


type Pending = { kind: "upload"; upload: ReturnType<SessionFiles["begin"]> | undefined } | { kind: "array"; failed: boolean };

export class SessionServer {
  private readonly files: SessionFiles;
  private readonly modules = new Map<number, LoadedModule>();
  private readonly arrays = new Map<number, RemoteArrayState>();
  private readonly chunked = new Map<number, Pending>();
  private arrayBytes = 0;
  /** Uploads answered from the content store: files, and bytes that did not cross the network. */
  private reused = { files: 0, bytes: 0 };
  private readonly counters: RequestCounters;
  private nextModule = 1;
  private nextArray = 1;
  private queue: HostFrame__Output[] = [];
  private running = false;
  private closeRequested = false;
  private resolveClosed!: () => void;
  /** Resolves when the host asked to close and the reply went out. */
  readonly closed = new Promise<void>((r) => (this.resolveClosed = r));

  constructor(
    private readonly backend: Backend,
    workdir: string,
    private readonly limits: SessionLimits,
    private readonly sink: FrameSink,
    private readonly hooks: SessionHooks = {},
  ) {
    this.files = new SessionFiles(workdir, limits, hooks.store);
    this.counters = hooks.counters ?? new RequestCounters();
  }

  /** One encoded HostFrame from the host. */
  receive(bytes: Uint8Array): void {
    let frame: HostFrame__Output;
    try {
      frame = decodeHostFrame(bytes);
    } catch (err) {
      this.reply({ id: 0, error: new FarmError("PROTOCOL_ERROR", `undecodable frame: ${(err as Error).message}`).toWire() });
      return;
    }
    this.queue.push(frame);
    if (!this.running) void this.pump();
  }

  /** Frees everything the session holds (arrays, open uploads). */
  dispose(): void {
    for (const pending of this.chunked.values()) if (pending.kind === "upload" && pending.upload) this.files.abandon(pending.upload);
    this.chunked.clear();
    for (const a of this.arrays.values()) a.array.free();
    this.arrays.clear();
    this.backend.reset();
  }

  private async pump(): Promise<void> {
    this.running = true;
    try {
      while (this.queue.length > 0) {
        const frame = this.queue.shift()!;
        try {
          const done = this.handle(frame);
          if (done) await done;
        } catch (err) {
          this.fail(frame, err);
        }
      }
    } finally {
      this.running = false;
    }
  }

  private fail(frame: HostFrame__Output, err: unknown): void {
    const e = FarmError.from(err);
    if (frame.op === "call" || frame.op === "time_evaluate" || frame.op === "measure") this.counters.failed(e.code);
    this.reply({ id: frame.id, error: e.toWire() });
  }

  private reply(frame: BoardFrame): boolean {
    return this.sink.send(encodeBoardFrame(frame));
  }

  private handle(f: HostFrame__Output): void | Promise<void> {
    // Every call request counts, refused ones too: errors never outnumber calls.
    if (f.op === "call") this.counters.calls++;
    else if (f.op === "time_evaluate" || f.op === "measure") this.counters.timeEvaluations++;
    if (this.closeRequested) throw new FarmError("SESSION_CLOSED", "the session is closing");
    switch (f.op) {
      case "upload":
        return this.upload(f.id, f.upload!);
      case "download":
        return this.sendChunks(f.id, this.files.read(f.download!.name));
      case "listdir":
        this.reply({ id: f.id, listing: { entries: this.files.list() } });
        return;
      case "remove":
        this.files.remove(f.remove!.name);
        this.reply({ id: f.id, ok: {} });
        return;
      case "load_module":
        return this.loadModule(f.id, f.load_module!.name);
      case "array_alloc":
        return this.allocArray(f.id, f.array_alloc!.shape, f.array_alloc!.dtype);
      case "array_write":
        return this.writeArray(f.id, f.array_write!);
      case "array_fill":
        return this.fillArray(f.id, f.array_fill!);
      case "array_read":
        return this.sendChunks(f.id, this.arrayOf(f.array_read!.array).array.read(0, this.arrayOf(f.array_read!.array).array.nbytes));
      case "array_free": {
        const a = this.arrayOf(f.array_free!.array);
        a.array.free();
        this.arrays.delete(f.array_free!.array);
        this.arrayBytes -= a.array.nbytes;
        this.reply({ id: f.id, ok: {} });
        return;
      }
      case "call":
        return this.call(f.id, f.call!);
      case "time_evaluate":
        return this.timeEvaluate(f);
      case "measure":
        return this.measure(f);
      case "stats": {
        const s = this.backend.stats();
        const counters = { ...s.counters, uploads_reused: this.reused.files, upload_bytes_reused: this.reused.bytes };
        this.reply({ id: f.id, stats: { counters, info: { ...s.info, ...this.hooks.info, worker_pid: String(process.pid) } } });
        return;
      }
      case "clear_stats":
        this.backend.clearStats();
        this.reply({ id: f.id, ok: {} });
        return;
      case "close":
        this.closeRequested = true;
        this.reply({ id: f.id, ok: {} });
        this.resolveClosed();
        return;
      default:
        throw new FarmError("PROTOCOL_ERROR", `frame ${f.id} carries no known operation`);
    }
  }

  private upload(id: number, u: NonNullable<HostFrame__Output["upload"]>): void | Promise<void> {
    let pending = this.chunked.get(id);
    if (!pending) {
      pending = { kind: "upload", upload: undefined };
      this.chunked.set(id, pending);
      try {
        if (u.probe) {
          this.chunked.delete(id);
          if (!u.sha256 || u.data.byteLength > 0 || !u.done) throw new FarmError("PROTOCOL_ERROR", `upload probe ${id} must carry a sha256, no data, and be its request's only frame`);
          return this.adopt(id, u);
        }
        pending.upload = this.files.begin(u.name, u.total_bytes, u.sha256 || undefined);
      } catch (err) {
        this.replyOnce(id, pending, u.done, err);
        return;
      }
    }
    if (pending.kind !== "upload") throw new FarmError("PROTOCOL_ERROR", `frame ${id} mixes an upload into another request`);
    if (!pending.upload) return this.replyOnce(id, pending, u.done); // failed earlier: swallow the rest
    try {
      if (u.data.byteLength > 0) this.files.append(pending.upload, u.data);
    } catch (err) {
      this.files.abandon(pending.upload);
      pending.upload = undefined;
      this.replyOnce(id, pending, u.done, err);
      return;
    }
    if (u.done) {
      this.chunked.delete(id);
      // With a digest, answered once the agent kept the file: a later session finds it.
      return this.files.finish(pending.upload).then(() => {
        this.reply({ id, ok: {} });
      });
    }
  }

  /** An upload probe: the file from the agent's store, or NOT_FOUND (the host then sends the bytes). */
  private async adopt(id: number, u: NonNullable<HostFrame__Output["upload"]>): Promise<void> {
    try {
      if (!(await this.files.adopt(u.name, u.sha256, u.total_bytes))) throw new FarmError("NOT_FOUND", `this board holds no ${u.total_bytes} bytes of sha256 ${u.sha256}; send them`);
    } catch (err) {
      this.fail({ id } as HostFrame__Output, err);
      return;
    }
    this.reused.files++;
    this.reused.bytes += u.total_bytes;
    this.reply({ id, ok: {} });
  }

  /** For a chunked request that failed: reply with the error once, forget it after its last chunk. */
  private replyOnce(id: number, pending: Pending, done: boolean, err?: unknown): void {
    if (err !== undefined) this.fail({ id } as HostFrame__Output, err);
    if (done) this.chunked.delete(id);
    else if (pending.kind === "upload") pending.upload = undefined;
    else pending.failed = true;
  }

  private async sendChunks(id: number, bytes: Uint8Array): Promise<void> {
    const total = bytes.byteLength;
    let offset = 0;
    do {
      const end = Math.min(total, offset + CHUNK_BYTES);
      const ok = this.reply({ id, data: { data: bytes.subarray(offset, end), offset, total_bytes: total, done: end === total } });
      offset = end;
      if (!ok) await this.sink.drained();
    } while (offset < total);
  }

  private loadModule(id: number, name: string): void {
    const bundle = decodeBundle(this.files.read(name));
    if (bundle.target !== this.backend.target) {
      const details = Object.values(bundle.targetDetails).join("/");
      throw new FarmError("TARGET_MISMATCH", `module "${name}" was built for target ${bundle.target}${details ? ` (${details})` : ""}, but this board is a ${this.backend.kind} board`);
    }
    const dir = this.files.dir;
    const wasTainted = this.backend.tainted;
    const module = this.backend.load(bundle, dir);
    if (!wasTainted && this.backend.tainted) this.hooks.onTainted?.();
    const moduleId = this.nextModule++;
    this.modules.set(moduleId, module);
    this.reply({
      id,
      module: {
        module: moduleId,
        target: bundle.target,
        functions: bundle.functions.map((fn) => ({
          name: fn.name,
          params: fn.params.map((p) => ({ name: p.name, kind: p.kind, dtype: p.dtype, shape: p.shape ?? [] })),
        })),
      },
    });
  }

  private allocArray(id: number, shape: number[], dtype: string): void {
    if (!isDtype(dtype)) throw new FarmError("BAD_ARGUMENTS", `unknown dtype ${JSON.stringify(dtype)}; known: ${Object.keys(DTYPES).join(", ")}`);
    if (shape.some((d) => !Number.isInteger(d) || d < 0)) throw new FarmError("BAD_ARGUMENTS", `shape ${JSON.stringify(shape)} must be non-negative integers`);
    const nbytes = elementCount(shape) * dtypeBytes(dtype);
    if (this.arrayBytes + nbytes > this.backend.memoryBytes) {
      throw new FarmError(
        "OUT_OF_MEMORY",
        `array [${shape.join(", ")}] ${dtype} needs ${nbytes} bytes; this board has ${this.backend.memoryBytes - this.arrayBytes} of its ${this.backend.memoryBytes} bytes left for this session`,
      );
    }
    const array = this.backend.alloc(nbytes);
    this.arrayBytes += nbytes;
    const arrayId = this.nextArray++;
    this.arrays.set(arrayId, { array, dtype, shape: [...shape] });
    this.reply({ id, array: { array: arrayId, nbytes } });
  }

  private writeArray(id: number, w: NonNullable<HostFrame__Output["array_write"]>): void {
    let pending = this.chunked.get(id);
    if (!pending) this.chunked.set(id, (pending = { kind: "array", failed: false }));
    if (pending.kind !== "array") throw new FarmError("PROTOCOL_ERROR", `frame ${id} mixes an array write into another request`);
    if (pending.failed) return this.replyOnce(id, pending, w.done);
    try {
      const a = this.arrayOf(w.array).array;
      if (w.offset < 0 || w.offset + w.data.byteLength > a.nbytes) {
        throw new FarmError("BAD_ARGUMENTS", `write of ${w.data.byteLength} bytes at offset ${w.offset} overruns array ${w.array} (${a.nbytes} bytes)`);
      }
      a.write(w.offset, w.data);
    } catch (err) {
      this.replyOnce(id, pending, w.done, err);
      return;
    }
    if (w.done) {
      this.chunked.delete(id);
      this.reply({ id, ok: {} });
    }
  }

  private fillArray(id: number, fill: NonNullable<HostFrame__Output["array_fill"]>): void {
    const a = this.arrayOf(fill.array);
    const spec = { seed: fill.seed, low: fill.low, high: fill.high, integers: fill.integers };
    const problem = fillProblem(a.dtype, spec);
    if (problem) throw new FarmError("BAD_ARGUMENTS", `fill of array ${fill.array} (${a.dtype}): ${problem}`);
    a.array.write(0, seededBytes(a.dtype, a.array.nbytes / dtypeBytes(a.dtype), spec));
    this.reply({ id, ok: {} });
  }

  private arrayOf(id: number): RemoteArrayState {
    const a = this.arrays.get(id);
    if (!a) throw new FarmError("NOT_FOUND", `no array ${id} in this session (freed, or never allocated)`);
    return a;
  }

  /** Looks up the function and checks every argument against its parameters. */
  private prepare(c: Call__Output): { fn: LoadedFunction; args: ArgValue[] } {
    const module = this.modules.get(c.module);
    if (!module) throw new FarmError("NOT_FOUND", `no module ${c.module} in this session; load one with loadModule`);
    const fn = module.functions.get(c.function);
    if (!fn) {
      throw new FarmError("UNKNOWN_FUNCTION", `module ${c.module} has no function "${c.function}"; it has: ${[...module.functions.keys()].join(", ")}`);
    }
    const params = fn.spec.params;
    const signature = `${fn.spec.name}(${params.map((p) => `${p.dtype}${p.kind === "buffer" ? "*" : ""} ${p.name}`).join(", ")})`;
    if (c.args.length !== params.length) {
      throw new FarmError("BAD_ARGUMENTS", `${signature} takes ${params.length} argument(s), got ${c.args.length}`);
    }
    const args = params.map((p, i): ArgValue => {
      const arg = c.args[i]!;
      const at = `argument ${i} (${p.name}) of ${signature}`;
      if (p.kind === "buffer") {
        if (arg.value !== "array") throw new FarmError("BAD_ARGUMENTS", `${at} must be a ${p.dtype} array, got a scalar`);
        const a = this.arrayOf(arg.array ?? 0);
        if (a.dtype !== p.dtype) throw new FarmError("BAD_ARGUMENTS", `${at} must be a ${p.dtype} array, got ${a.dtype}`);
        if (p.shape && p.shape.length > 0 && (p.shape.length !== a.shape.length || p.shape.some((d, k) => d !== a.shape[k]))) {
          throw new FarmError("BAD_ARGUMENTS", `${at} must have shape [${p.shape.join(", ")}], got [${a.shape.join(", ")}]`);
        }
        return { kind: "buffer", array: a.array };
      }
      if (arg.value === "array") throw new FarmError("BAD_ARGUMENTS", `${at} must be a ${p.dtype} scalar, got an array`);
      const value = (arg.value === "int_value" ? arg.int_value : arg.float_value) ?? 0;
      const range = integerRange(p.dtype);
      if (!range) return { kind: "scalar", value };
      if (arg.value !== "int_value" || !Number.isSafeInteger(value)) throw new FarmError("BAD_ARGUMENTS", `${at} must be an integer, got ${value}`);
      // The FFI wraps out-of-range integers silently (2^32 + 8 → 8 for an int32): refuse them.
      const [min, max] = range;
      if (value < min || value > max) throw new FarmError("BAD_ARGUMENTS", `${at} must be a ${p.dtype} in [${min}, ${max}], got ${value}`);
      return { kind: "scalar", value };
    });
    return { fn, args };
  }

  private guarded<T>(c: Call__Output, what: string, run: () => T): T {
    const timeoutMs = c.timeout_ms || this.limits.callTimeoutMs;
    this.hooks.watchdog?.arm(timeoutMs, `${what} ${c.function} ran past its ${timeoutMs} ms timeout`);
    try {
      return run();
    } catch (err) {
      if (err instanceof FarmError) throw err;
      throw new FarmError("RUNTIME_ERROR", `${what} ${c.function} failed: ${(err as Error).message}`, { cause: err });
    } finally {
      this.hooks.watchdog?.disarm();
    }
  }

  /** The call's board-specific settings; refused on boards that have no such thing. */
  private settings(c: Call__Output, timing: { flush_l2?: boolean; graph?: boolean; flush_cpu_cache?: boolean } = {}): CallSettings {
    // The common case, on every call: nothing board-specific asked.
    if (!c.launch && !timing.flush_l2 && !timing.graph && !timing.flush_cpu_cache) return NO_SETTINGS;
    const settings: CallSettings = {};
    if (c.launch) {
      const launch = { grid: c.launch.grid, block: c.launch.block, sharedMemBytes: c.launch.shared_mem_bytes };
      const problem = launchProblem(launch);
      if (problem) throw new FarmError("BAD_ARGUMENTS", `launch of ${c.function}: ${problem}`);
      settings.launch = launch as CallSettings["launch"];
    }
    if (timing.flush_l2) settings.flushL2 = true;
    if (timing.graph) settings.graph = true;
    if (timing.flush_cpu_cache) settings.flushCpuCache = true;
    for (const target of ["cuda", "cpu"] as const) {
      const given = (Object.keys(settings) as (keyof CallSettings)[]).filter((k) => SETTING_TARGETS[k] === target);
      if (given.length === 0 || this.backend.target === target) continue;
      const hint = target === "cpu" && this.backend.target === "cuda" ? " (flushL2 flushes a GPU's L2)" : "";
      throw new FarmError("BAD_ARGUMENTS", `${given.join(", ")} ${given.length > 1 ? "are options" : "is an option"} of ${target.toUpperCase()} boards; this is a ${this.backend.kind} board${hint}`);
    }
    return settings;
  }

  private call(id: number, c: Call__Output): void {
    const { fn, args } = this.prepare(c);
    const settings = this.settings(c);
    const t0 = process.hrtime.bigint();
    this.guarded(c, "call", () => this.backend.invoke(fn, args, settings));
    this.reply({ id, call: { elapsed_ns: Number(process.hrtime.bigint() - t0) } });
  }

  private timeEvaluate(f: HostFrame__Output): void {
    const result = this.evaluate(f.time_evaluate!);
    this.reply({ id: f.id, time: { results_s: result.resultsS, number: result.number, conditions: this.backend.stats().info } });
  }

  /** TVM's time_evaluator for `t`, run next to the board. */
  private evaluate(t: TimeEvaluate__Output): TimeEvaluation {
    if (!t.call) throw new FarmError("BAD_ARGUMENTS", "time_evaluate needs a call");
    const c = t.call;
    if (t.repeat < 1 || t.number < 1) throw new FarmError("BAD_ARGUMENTS", `time_evaluate needs number ≥ 1 and repeat ≥ 1 (got number ${t.number}, repeat ${t.repeat})`);
    const { fn, args } = this.prepare(c);
    const settings = this.settings(c, t);
    return this.guarded(c, "time_evaluate of", () =>
      evaluateTime(
        {
          number: t.number,
          repeat: t.repeat,
          minRepeatMs: t.min_repeat_ms,
          cooldownMs: t.cooldown_ms,
          repeatsToCooldown: t.repeats_to_cooldown || 1,
          limitZeroTimeIterations: t.limit_zero_time_iterations || 100,
        },
        () => this.backend.invoke(fn, args, { launch: settings.launch }),
        (n) => this.backend.timeCalls(fn, args, n, settings),
      ),
    );
  }

  /**
   * measure() as one request: counters cleared; each checked output poisoned,
   * one call, outputs compared; the time evaluation; poison, call and compare
   * again (a kernel whose answer changes when run repeatedly is caught).
   */
  private measure(f: HostFrame__Output): void {
    const m = f.measure!;
    const c = m.time?.call;
    if (!c) throw new FarmError("BAD_ARGUMENTS", "measure needs a time_evaluate with a call");
    const checks = m.checks.map((k, i) => {
      const a = this.arrayOf(k.array);
      if (k.expect.byteLength !== a.array.nbytes) {
        throw new FarmError("BAD_ARGUMENTS", `check ${i}: the reference has ${k.expect.byteLength} bytes, array ${k.array} holds ${a.array.nbytes}`);
      }
      return { k, a, want: viewAs(a.dtype, k.expect) };
    });
    const { fn, args } = this.prepare(c);
    const settings = this.settings(c, m.time!);
    const check = (when: string): string => {
      for (const { a } of checks) a.array.write(0, new Uint8Array(a.array.nbytes).fill(POISON));
      this.guarded(c, "call", () => this.backend.invoke(fn, args, { launch: settings.launch }));
      for (const [i, { k, a, want }] of checks.entries()) {
        const bad = firstMismatch(viewAs(a.dtype, a.array.read(0, a.array.nbytes)), want, k.atol, k.rtol);
        if (bad) return `output ${i} ${when}: ${bad}`;
      }
      return "";
    };
    this.backend.clearStats();
    const before = check("before timing");
    if (before) {
      this.reply({ id: f.id, measured: { wrong: before, counters: this.backend.stats().counters } });
      return;
    }
    const result = this.evaluate(m.time!);
    const after = check("after timing");
    const s = this.backend.stats();
    this.reply({ id: f.id, measured: { time: { results_s: result.resultsS, number: result.number, conditions: s.info }, wrong: after, counters: s.counters } });
  }
}
