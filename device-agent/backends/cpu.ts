/**
 * The CPU board: a shared object built by the host (`cc -shared -fPIC`),
 * loaded with koffi; C ABI kernels `void f(T* a, ..., scalars)` called with
 * the worker's own memory as device memory.
 */
import { writeFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { join } from "node:path";
import koffi from "koffi";

type KoffiLib = ReturnType<typeof koffi.load>;
import { DTYPES, FarmError, type FunctionSpec, type ModuleBundle } from "../../protos/index.ts";
import { hostCpuTarget } from "../../domain/index.ts";
import type { ArgValue, Backend, BackendStats, BoardFacts, CallSettings, CanaryResult, DeviceArray, LoadedFunction, LoadedModule } from "./backend.ts";
import { timeCanary } from "./canary-timing.ts";

export function describeCpuBoard(): BoardFacts {
  const cpu = cpus();
  return {
    labels: { ...hostCpuTarget() },
    capabilities: { cores: String(cpu.length), model: cpu[0]?.model.trim() ?? "unknown", memory_bytes: String(totalmem()) },
  };
}

interface CpuFunction extends LoadedFunction {
  readonly native: (...args: unknown[]) => unknown;
}

class HostArray implements DeviceArray {
  constructor(
    readonly buffer: Buffer,
    private readonly onFree: (a: HostArray) => void,
  ) {}
  get nbytes(): number {
    return this.buffer.byteLength;
  }
  write(offset: number, data: Uint8Array): void {
    this.buffer.set(data, offset);
  }
  read(offset: number, length: number): Uint8Array {
    return this.buffer.subarray(offset, offset + length);
  }
  free(): void {
    this.onFree(this);
  }
}

export interface CpuBackendOptions {
  /** Total bytes of arrays one session may hold; default a quarter of RAM. */
  memoryBytes?: number;
  /** Shared object with `void kfarm_canary_vadd(const float*, const float*, float*, int32_t)` (device-agent/agent/canary.ts builds it). */
  canaryLibrary?: string;
  /** The helper library device-agent/agent/canary.ts builds, for `int32_t kfarm_flush_range(const void*, size_t)`. */
  supportLibrary?: string;
}

/** The canary: c = a + b over CANARY_N floats, checked exactly. */
const CANARY_N = 64;
/**
 * Then timed over CANARY_TIMED_N floats (48 KiB in all: the first cache
 * levels), CANARY_NUMBER runs per repeat: over 64 floats the add is a few
 * nanoseconds under a call that costs hundreds, and the drift the tracker
 * looks for is the board's, not the FFI's.
 */
const CANARY_TIMED_N = 4096;
const CANARY_NUMBER = 20;

export class CpuBackend implements Backend {
  readonly loadsNativeCode = true;
  readonly kind = "cpu";
  readonly target = "cpu" as const;
  readonly memoryBytes: number;
  tainted = false;
  private readonly arrays = new Set<HostArray>();
  private libs: KoffiLib[] = [];
  private canaryFn: ((...args: unknown[]) => unknown) | undefined;
  private readonly canaryLibrary: string | undefined;
  private readonly supportLibrary: string | undefined;
  private flushFn: ((p: Buffer, n: number) => number) | undefined;
  private modules = 0;
  private calls = 0;
  private callNs = 0;
  private flushes = 0;

  constructor(opts: CpuBackendOptions = {}) {
    this.memoryBytes = opts.memoryBytes ?? Math.floor(totalmem() / 4);
    this.canaryLibrary = opts.canaryLibrary;
    this.supportLibrary = opts.supportLibrary;
  }

  /** TVM's cache_flush_cpu_non_first_arg: every buffer argument but the first, out of every cache level. */
  private flushArgs(values: readonly unknown[]): void {
    if (!this.flushFn) {
      if (!this.supportLibrary)
        throw new FarmError("BAD_ARGUMENTS", "flushCpuCache: this board has no cache-flush helper (its agent found no C compiler to build it)");
      const fn = koffi.load(this.supportLibrary).func("kfarm_flush_range", "int32_t", ["void *", "size_t"]) as (p: Buffer, n: number) => number;
      if (fn(Buffer.alloc(64), 64) !== 1)
        throw new FarmError("BAD_ARGUMENTS", `flushCpuCache: no cache-flush instruction for ${process.arch} in the helper library`);
      this.flushFn = fn;
    }
    for (const v of values.slice(1)) {
      if (Buffer.isBuffer(v)) this.flushFn(v, v.byteLength);
    }
    this.flushes++;
  }

  canary(): CanaryResult | undefined {
    if (!this.canaryLibrary) return undefined;
    try {
      this.canaryFn ??= koffi.load(this.canaryLibrary).func("kfarm_canary_vadd", "void", ["float *", "float *", "float *", "int32_t"]);
    } catch (err) {
      return { ok: false, detail: `cannot load the canary library ${this.canaryLibrary}: ${(err as Error).message}` };
    }
    const a = Float32Array.from({ length: CANARY_N }, (_, i) => i);
    const b = Float32Array.from({ length: CANARY_N }, (_, i) => 2 * i + 0.5);
    const c = new Float32Array(CANARY_N);
    this.canaryFn(a, b, c, CANARY_N);
    const bad = c.findIndex((v, i) => v !== 3 * i + 0.5);
    if (bad >= 0) return { ok: false, detail: `vadd[${bad}] = ${c[bad]}, expected ${3 * bad + 0.5}` };
    const fn = this.canaryFn;
    const [ta, tb, tc] = [0, 1, 2].map(() => new Float32Array(CANARY_TIMED_N).fill(1));
    fn(ta, tb, tc, CANARY_TIMED_N); // first touch and first call outside the timing
    const kernelNs = timeCanary((number) => {
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < number; i++) fn(ta, tb, tc, CANARY_TIMED_N);
      return Number(process.hrtime.bigint() - t0);
    }, CANARY_NUMBER);
    return { ok: true, detail: `vadd of ${CANARY_N} floats exact`, kernelNs };
  }

  alloc(nbytes: number): DeviceArray {
    const array = new HostArray(Buffer.alloc(nbytes), (a) => this.arrays.delete(a));
    this.arrays.add(array);
    return array;
  }

  load(bundle: ModuleBundle, workdir: string): LoadedModule {
    const want = hostCpuTarget();
    const got = { arch: bundle.targetDetails.arch, os: bundle.targetDetails.os };
    if (got.arch !== want.arch || got.os !== want.os) {
      throw new FarmError(
        "TARGET_MISMATCH",
        `the module was built for ${got.os}/${got.arch} but this board is ${want.os}/${want.arch}: compile it with a C compiler for ${want.os}/${want.arch} (compileCpu's cc option), or request a board of the module's architecture`,
        { details: { module: `${got.os}/${got.arch}`, board: `${want.os}/${want.arch}` } },
      );
    }
    const path = join(workdir, `.module${this.modules++}.so`);
    writeFileSync(path, bundle.binary);
    this.tainted = true;
    let lib: KoffiLib;
    try {
      lib = koffi.load(path);
    } catch (err) {
      throw new FarmError("LOAD_ERROR", `cannot load the shared object: ${(err as Error).message}`, { cause: err });
    }
    this.libs.push(lib);
    const functions = new Map<string, CpuFunction>();
    for (const spec of bundle.functions) functions.set(spec.name, { spec, native: bind(lib, spec) });
    return { functions };
  }

  invoke(fn: LoadedFunction, args: readonly ArgValue[]): void {
    const native = (fn as CpuFunction).native;
    const values = args.map(toNative);
    const t0 = process.hrtime.bigint();
    native(...values);
    this.callNs += Number(process.hrtime.bigint() - t0);
    this.calls++;
  }

  timeCalls(fn: LoadedFunction, args: readonly ArgValue[], number: number, settings: CallSettings = {}): number {
    const native = (fn as CpuFunction).native;
    const values = args.map(toNative);
    if (settings.flushCpuCache) this.flushArgs(values);
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < number; i++) native(...values);
    const ns = Number(process.hrtime.bigint() - t0);
    this.calls += number;
    this.callNs += ns;
    return ns;
  }

  stats(): BackendStats {
    let bytes = 0;
    for (const a of this.arrays) bytes += a.nbytes;
    return {
      counters: {
        calls: this.calls,
        call_ns_total: this.callNs,
        array_bytes: bytes,
        arrays: this.arrays.size,
        modules: this.modules,
        cache_flushes: this.flushes,
      },
      info: { kind: this.kind, arch: hostCpuTarget().arch, model: cpus()[0]?.model.trim() ?? "unknown" },
    };
  }

  clearStats(): void {
    this.calls = 0;
    this.callNs = 0;
    this.flushes = 0;
  }

  reset(): void {
    this.arrays.clear();
    this.clearStats();
  }
}

function toNative(arg: ArgValue): unknown {
  return arg.kind === "buffer" ? (arg.array as HostArray).buffer : arg.value;
}

function bind(lib: KoffiLib, spec: FunctionSpec): (...args: unknown[]) => unknown {
  const types = spec.params.map((p) => (p.kind === "buffer" ? "void *" : DTYPES[p.dtype].c));
  try {
    return lib.func(spec.name, "void", types);
  } catch (err) {
    throw new FarmError("LOAD_ERROR", `the shared object has no usable function "${spec.name}": ${(err as Error).message}`, { cause: err });
  }
}
