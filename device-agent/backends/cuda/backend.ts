/**
 * The CUDA board: one GPU's primary context in the session worker, modules
 * (cubin/fatbin) loaded with the driver, device memory for remote arrays,
 * launches on the legacy stream, timing with CUDA events around `number`
 * launches (optionally a captured CUDA graph of them, optionally after
 * overwriting L2).
 *
 * A sticky driver error (an illegal address, a trap) loses the context: the
 * backend then refuses everything with that error, and the worker, tainted
 * since its first module load, exits after the session; the pool has already
 * started its successor.
 */
import koffi from "koffi";
import { FarmError, type BundleTarget, type Dtype, type FunctionSpec, type LaunchConfig, type ModuleBundle } from "../../../protos/index.ts";
import { describeThrottling, type ThrottleSample } from "../../../domain/index.ts";
import type { ArgValue, Backend, BackendStats, BoardFacts, CallSettings, CanaryResult, DeviceArray, LoadedFunction, LoadedModule } from "../backend.ts";
import { timeCanary } from "../canary-timing.ts";
import { CANARY_PTX, CANARY_SPEC } from "./canary-ptx.ts";
import { cudaDeviceInfo, type CudaDeviceInfo } from "./device-info.ts";
import { CudaDriver, CudaError, FUNC_ATTR, type DevicePtr, type Handle } from "./driver.ts";
import { Nvml } from "./nvml.ts";

/** Registration facts for device `ordinal`: labels hosts can select on. */
export function describeCudaBoard(ordinal: number): BoardFacts {
  const d = cudaDeviceInfo(ordinal);
  return {
    labels: {
      arch: d.arch,
      memory: `${Math.floor(d.memoryBytes / 2 ** 30)}GiB`,
      sm_count: String(d.smCount),
      driver: d.driverVersion,
    },
    capabilities: {
      name: d.name,
      compute_capability: d.computeCapability,
      memory_bytes: String(d.memoryBytes),
      l2_bytes: String(d.l2Bytes),
      pci_bus_id: d.pciBusId,
      device: String(ordinal),
    },
    // What a host needs to refuse a kernel that cannot launch before sending it (measure()'s INVALID_CONFIG).
    cudaLimits: {
      maxThreadsPerBlock: d.maxThreadsPerBlock,
      maxBlock: d.maxBlock,
      maxGrid: d.maxGrid,
      maxSharedPerBlock: d.maxSharedPerBlock,
      maxSharedPerBlockOptin: d.maxSharedPerBlockOptin,
      maxRegistersPerBlock: d.maxRegistersPerBlock,
      warpSize: d.warpSize,
    },
  };
}

/** Attributes the driver reports for one kernel (its stats). */
interface KernelAttributes {
  registers: number;
  shared_static_bytes: number;
  const_bytes: number;
  local_bytes: number;
  max_threads_per_block: number;
  ptx_version: number;
  binary_version: number;
}

interface CudaFunction extends LoadedFunction {
  readonly handle: Handle;
  readonly attributes: KernelAttributes;
  /** Dynamic shared memory the function was opted in to, beyond the default 48 KiB. */
  dynamicSharedOptIn: number;
}

class CudaArray implements DeviceArray {
  constructor(
    readonly ptr: DevicePtr,
    readonly nbytes: number,
    private readonly backend: CudaBackend,
  ) {}
  write(offset: number, data: Uint8Array): void {
    if (data.byteLength === 0) return;
    this.backend.driverCall("cuMemcpyHtoD_v2", this.ptr + BigInt(offset), data, data.byteLength);
  }
  read(offset: number, length: number): Uint8Array {
    const out = Buffer.allocUnsafe(length);
    if (length > 0) this.backend.driverCall("cuMemcpyDtoH_v2", out, this.ptr + BigInt(offset), length);
    return out;
  }
  free(): void {
    this.backend.release(this);
  }
}

/** The 8-byte slot of one kernel argument: device pointers and scalars as the kernel reads them. */
function writeScalar(slot: Buffer, offset: number, dtype: Dtype, value: number): void {
  switch (dtype) {
    case "int8":
      return void slot.writeInt8(value, offset);
    case "uint8":
      return void slot.writeUInt8(value, offset);
    case "int16":
      return void slot.writeInt16LE(value, offset);
    case "uint16":
      return void slot.writeUInt16LE(value, offset);
    case "int32":
      return void slot.writeInt32LE(value, offset);
    case "uint32":
      return void slot.writeUInt32LE(value, offset);
    case "int64":
      return void slot.writeBigInt64LE(BigInt(value), offset);
    case "uint64":
      return void slot.writeBigUInt64LE(BigInt(value), offset);
    case "float32":
      return void slot.writeFloatLE(value, offset);
    case "float64":
      return void slot.writeDoubleLE(value, offset);
  }
}

/**
 * Launches, events and copies go to the legacy stream, as in a plain CUDA
 * program. On an H100, launches on a created (blocking) stream timed a 20 µs
 * conv2d 1.1–1.3 % slower than a C program on the legacy stream; on the
 * legacy stream the difference is 0.1 % (BENCHMARKS.md, CUDA section).
 */
const LEGACY_STREAM: Handle = 0n;

/** A captured graph of `number` launches, kept while the same evaluation reuses it. */
interface CapturedGraph {
  key: string;
  graph: Handle;
  exec: Handle;
}

export interface CudaBackendOptions {
  /** Device ordinal. */
  device: number;
  /** Bytes of arrays one session may hold; default the device's memory. */
  memoryBytes?: number;
}

/** The canary is timed over this many floats (4 MiB per array: the board's memory, not the launch, sets the time). */
const CANARY_TIMED_N = 1 << 20;
/** Launches per timed repeat of the canary. */
const CANARY_NUMBER = 20;

export class CudaBackend implements Backend {
  readonly loadsNativeCode = true;
  readonly kind = "cuda";
  readonly target: BundleTarget = "cuda";
  readonly memoryBytes: number;
  readonly device: CudaDeviceInfo;
  tainted = false;
  private readonly driver = CudaDriver.get();
  /** Only graphs use a stream of their own (capture cannot run on the legacy stream), created when first needed. */
  private graphStream: Handle | undefined;
  private readonly start: Handle;
  private readonly end: Handle;
  private readonly nvml: Nvml | undefined;
  private readonly arrays = new Set<CudaArray>();
  private readonly kernels = new Map<string, CudaFunction>();
  private flushBuffer: { ptr: DevicePtr; words: number } | undefined;
  private flushes = 0;
  private graph: CapturedGraph | undefined;
  private broken: CudaError | undefined;
  private modules = 0;
  private calls = 0;
  private callNs = 0;

  constructor(opts: CudaBackendOptions) {
    this.device = cudaDeviceInfo(opts.device);
    const dev = this.driver.device(opts.device);
    this.driver.call("cuCtxSetCurrent", this.driver.primaryContext(dev));
    this.start = this.driver.createEvent();
    this.end = this.driver.createEvent();
    this.nvml = Nvml.open(this.device.pciBusId);
    this.memoryBytes = opts.memoryBytes ?? this.device.memoryBytes;
  }

  /** A driver call that marks the board broken on a sticky error. */
  driverCall(name: string, ...args: unknown[]): void {
    this.guard(() => this.driver.call(name, ...args));
  }

  private guard<T>(run: () => T, context?: string): T {
    if (this.broken) {
      throw new CudaError(
        "DEVICE_ERROR",
        `the CUDA context of this board was lost earlier (${this.broken.cuda}); this session can do nothing more on it: close it and request a new one`,
        this.broken.cuda,
        true,
      );
    }
    try {
      return run();
    } catch (err) {
      if (!(err instanceof CudaError)) throw err;
      const e = context ? new CudaError(err.code, `${context}: ${err.message}`, err.cuda, err.sticky) : err;
      if (e.sticky) {
        this.broken = e;
        throw new CudaError(e.code, `${e.message}; the session's worker will be replaced: close this session and request a new one`, e.cuda, true);
      }
      throw e;
    }
  }

  alloc(nbytes: number): DeviceArray {
    const ptr = nbytes > 0 ? this.guard(() => this.driver.memAlloc(nbytes)) : 0n;
    const array = new CudaArray(ptr, nbytes, this);
    if (nbytes > 0) {
      try {
        // Zeroed, as arrays are on every board.
        this.driverCall("cuMemsetD8_v2", ptr, 0, nbytes);
      } catch (err) {
        this.driver.call("cuMemFree_v2", ptr);
        throw err;
      }
    }
    this.arrays.add(array);
    return array;
  }

  /** Frees an array's device memory; after a lost context there is nothing left to free. */
  release(array: CudaArray): void {
    if (!this.arrays.delete(array)) return;
    if (array.ptr !== 0n && !this.broken) this.driverCall("cuMemFree_v2", array.ptr);
  }

  load(bundle: ModuleBundle): LoadedModule {
    this.checkArch(bundle);
    this.tainted = true;
    const module = this.guard(() => this.driver.loadModule(bundle.binary, `loading the ${bundle.targetDetails.format} for ${bundle.targetDetails.arch}`));
    this.modules++;
    const functions = new Map<string, CudaFunction>();
    for (const spec of bundle.functions) {
      const handle = this.guard(() => {
        try {
          return this.driver.getFunction(module, spec.name);
        } catch (err) {
          if (err instanceof CudaError && err.cuda === "CUDA_ERROR_NOT_FOUND") {
            throw new FarmError("LOAD_ERROR", `the module has no kernel "${spec.name}" (is it declared extern "C" __global__?)`);
          }
          throw err;
        }
      });
      const a = (attr: number) => this.guard(() => this.driver.funcAttribute(handle, attr));
      const fn: CudaFunction = {
        spec,
        handle,
        dynamicSharedOptIn: 0,
        attributes: {
          registers: a(FUNC_ATTR.NUM_REGS),
          shared_static_bytes: a(FUNC_ATTR.SHARED_SIZE_BYTES),
          const_bytes: a(FUNC_ATTR.CONST_SIZE_BYTES),
          local_bytes: a(FUNC_ATTR.LOCAL_SIZE_BYTES),
          max_threads_per_block: a(FUNC_ATTR.MAX_THREADS_PER_BLOCK),
          ptx_version: a(FUNC_ATTR.PTX_VERSION),
          binary_version: a(FUNC_ATTR.BINARY_VERSION),
        },
      };
      functions.set(spec.name, fn);
      this.kernels.set(spec.name, fn);
    }
    return { functions };
  }

  /**
   * Refuses a binary this GPU cannot run, naming both: SASS runs only on its
   * own major architecture at an equal or newer minor; PTX is compiled by the
   * driver for any GPU at least as new as its virtual architecture.
   */
  private checkArch(bundle: ModuleBundle): void {
    const parse = (arch: string) => /^(?:sm|compute)_(\d+?)(\d)([a-z]?)$/.exec(arch);
    const board = parse(this.device.arch)!;
    const built = parse(bundle.targetDetails.arch ?? "");
    const ptx = bundle.targetDetails.ptx && bundle.targetDetails.ptx !== "none" ? parse(bundle.targetDetails.ptx) : null;
    const boardCc = Number(board[1]) * 10 + Number(board[2]);
    const sassRuns = !!built && built[1] === board[1] && Number(built[2]) <= Number(board[2]) && (!built[3] || Number(built[2]) === Number(board[2]));
    const ptxRuns = !!ptx && !ptx[3] && Number(ptx[1]) * 10 + Number(ptx[2]) <= boardCc;
    if (sassRuns || ptxRuns) return;
    const what = ptx ? `${bundle.targetDetails.arch} with PTX ${bundle.targetDetails.ptx}` : `${bundle.targetDetails.arch} (cubin only, no PTX)`;
    throw new FarmError(
      "TARGET_MISMATCH",
      `the module was built for ${what}, which this board cannot run: it is a ${this.device.name}, ${this.device.arch}; compile with arch "${this.device.arch}"`,
      { details: { module_arch: bundle.targetDetails.arch, board_arch: this.device.arch } },
    );
  }

  /** The launch for this call, checked against the kernel's and the device's limits. */
  private launchFor(fn: CudaFunction, call: CallSettings): LaunchConfig {
    const name = fn.spec.name;
    const launch = call.launch ?? fn.spec.launch;
    if (!launch) {
      throw new FarmError(
        "BAD_ARGUMENTS",
        `kernel ${name} was compiled without a launch configuration: give one with the call, e.g. fn.withOptions({ launch: { grid: 128, block: 256 } })`,
      );
    }
    const d = this.device;
    const threads = launch.block[0] * launch.block[1] * launch.block[2];
    const maxThreads = fn.attributes.max_threads_per_block;
    if (threads > maxThreads) {
      throw new FarmError(
        "LAUNCH_ERROR",
        `block ${launch.block.join("×")} = ${threads} threads, but kernel ${name} can run at most ${maxThreads} threads per block on the ${d.name} (it uses ${fn.attributes.registers} registers per thread)`,
      );
    }
    const dims = ["x", "y", "z"];
    launch.block.forEach((b, i) => {
      if (b > d.maxBlock[i]!)
        throw new FarmError("LAUNCH_ERROR", `block ${launch.block.join("×")}: ${dims[i]} is ${b}, the ${d.name} allows at most ${d.maxBlock[i]}`);
    });
    launch.grid.forEach((g, i) => {
      if (g > d.maxGrid[i]!)
        throw new FarmError("LAUNCH_ERROR", `grid ${launch.grid.join("×")}: ${dims[i]} is ${g}, the ${d.name} allows at most ${d.maxGrid[i]}`);
    });
    const staticShared = fn.attributes.shared_static_bytes;
    if (staticShared + launch.sharedMemBytes > d.maxSharedPerBlockOptin) {
      throw new FarmError(
        "LAUNCH_ERROR",
        `kernel ${name} asks for ${launch.sharedMemBytes} bytes of dynamic shared memory on top of its ${staticShared} static bytes; the ${d.name} has at most ${d.maxSharedPerBlockOptin} bytes per block`,
      );
    }
    // Beyond the default 48 KiB a kernel must be opted in to more dynamic shared memory.
    if (staticShared + launch.sharedMemBytes > d.maxSharedPerBlock && launch.sharedMemBytes > fn.dynamicSharedOptIn) {
      this.driverCall("cuFuncSetAttribute", fn.handle, FUNC_ATTR.MAX_DYNAMIC_SHARED_SIZE_BYTES, launch.sharedMemBytes);
      fn.dynamicSharedOptIn = launch.sharedMemBytes;
    }
    return launch;
  }

  /** The kernelParams array: one pointer per argument, each to an 8-byte slot holding its value. */
  private params(args: readonly ArgValue[], spec: FunctionSpec): Buffer | null {
    if (args.length === 0) return null;
    const slots = Buffer.alloc(8 * args.length);
    const pointers = Buffer.alloc(8 * args.length);
    const base = koffi.address(slots);
    args.forEach((arg, i) => {
      if (arg.kind === "buffer") slots.writeBigUInt64LE((arg.array as CudaArray).ptr, 8 * i);
      else writeScalar(slots, 8 * i, spec.params[i]!.dtype, arg.value);
      pointers.writeBigUInt64LE(base + BigInt(8 * i), 8 * i);
    });
    // The slots must outlive the launch call: keep them reachable from the pointer array.
    (pointers as Buffer & { slots?: Buffer }).slots = slots;
    return pointers;
  }

  private launchN(fn: CudaFunction, launch: LaunchConfig, params: Buffer | null, n: number, stream: Handle): void {
    for (let i = 0; i < n; i++) {
      this.driver.launch(fn.handle, launch.grid, launch.block, launch.sharedMemBytes, stream, params, `kernel ${fn.spec.name}`);
    }
  }

  invoke(f: LoadedFunction, args: readonly ArgValue[], call: CallSettings = {}): void {
    const fn = f as CudaFunction;
    const launch = this.launchFor(fn, call);
    const params = this.params(args, fn.spec);
    const t0 = process.hrtime.bigint();
    this.guard(() => {
      this.launchN(fn, launch, params, 1, LEGACY_STREAM);
      this.driver.call("cuStreamSynchronize", LEGACY_STREAM);
    }, `kernel ${fn.spec.name}`);
    this.callNs += Number(process.hrtime.bigint() - t0);
    this.calls++;
  }

  /** CUDA events around `number` launches (or one replay of a graph of them), after an L2 flush if asked. */
  timeCalls(f: LoadedFunction, args: readonly ArgValue[], number: number, call: CallSettings = {}): number {
    const fn = f as CudaFunction;
    const launch = this.launchFor(fn, call);
    const params = this.params(args, fn.spec);
    const ms = this.guard(() => {
      const graph = call.graph ? this.capture(fn, launch, params, number) : undefined;
      const stream = graph ? this.graphStream! : LEGACY_STREAM;
      // The graph stream does not wait for the legacy stream's copies: wait here, outside the timing.
      if (graph) this.driver.call("cuCtxSynchronize");
      if (call.flushL2) this.flushL2(stream);
      this.driver.call("cuEventRecord", this.start, stream);
      if (graph) this.driver.call("cuGraphLaunch", graph.exec, stream);
      else this.launchN(fn, launch, params, number, stream);
      this.driver.call("cuEventRecord", this.end, stream);
      this.driver.call("cuEventSynchronize", this.end);
      return this.driver.elapsedMs(this.start, this.end);
    }, `kernel ${fn.spec.name}`);
    this.calls += number;
    this.callNs += ms * 1e6;
    return Math.round(ms * 1e6);
  }

  /** The graph of `number` launches with these arguments, captured once and replayed. */
  private capture(fn: CudaFunction, launch: LaunchConfig, params: Buffer | null, number: number): CapturedGraph {
    const key = `${fn.spec.name}|${number}|${launch.grid}|${launch.block}|${launch.sharedMemBytes}|${params ? (params as Buffer & { slots: Buffer }).slots.toString("hex") : ""}`;
    if (this.graph?.key === key) return this.graph;
    this.dropGraph();
    const CU_STREAM_NON_BLOCKING = 1;
    const CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;
    this.graphStream ??= this.driver.createStream(CU_STREAM_NON_BLOCKING);
    this.driver.call("cuStreamBeginCapture_v2", this.graphStream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    try {
      this.launchN(fn, launch, params, number, this.graphStream);
    } finally {
      const graph = this.driver.endCapture(this.graphStream);
      this.graph = { key, graph, exec: 0n };
    }
    this.graph.exec = this.driver.instantiateGraph(this.graph.graph);
    return this.graph;
  }

  private dropGraph(): void {
    if (!this.graph) return;
    if (this.graph.exec) this.driver.call("cuGraphExecDestroy", this.graph.exec);
    this.driver.call("cuGraphDestroy", this.graph.graph);
    this.graph = undefined;
  }

  /** Overwrites a buffer twice the size of L2, so the next repeat starts with nothing of its data cached. */
  private flushL2(stream: Handle): void {
    if (!this.flushBuffer) {
      const bytes = Math.max(2 * this.device.l2Bytes, 1 << 20);
      this.flushBuffer = { ptr: this.driver.memAlloc(bytes), words: bytes / 4 };
    }
    this.driver.call("cuMemsetD32Async", this.flushBuffer.ptr, ++this.flushes, this.flushBuffer.words, stream);
  }

  /**
   * saxpy over 1024 floats from embedded PTX, through the session path (module
   * load, device memory, launch, copies), checked exactly, then timed with
   * events over CANARY_TIMED_N floats (a kernel of 1024 floats is all launch
   * latency, the board's memory and clocks would not show); the module is
   * unloaded after, so the worker stays clean.
   */
  canary(): CanaryResult {
    const n = 1024;
    try {
      return this.guard(() => {
        const module = this.driver.loadModule(Buffer.from(`${CANARY_PTX}\0`), "loading the canary PTX");
        try {
          const fn = this.driver.getFunction(module, CANARY_SPEC.name);
          const x = Float32Array.from({ length: n }, (_, i) => i);
          const y = Float32Array.from({ length: n }, (_, i) => 1 - i);
          const dx = this.alloc(n * 4) as CudaArray;
          const dy = this.alloc(n * 4) as CudaArray;
          try {
            dx.write(0, new Uint8Array(x.buffer));
            dy.write(0, new Uint8Array(y.buffer));
            const args: ArgValue[] = [
              { kind: "scalar", value: 2 },
              { kind: "buffer", array: dx },
              { kind: "buffer", array: dy },
              { kind: "scalar", value: n },
            ];
            const params = this.params(args, CANARY_SPEC);
            this.driver.launch(fn, [n / 256, 1, 1], [256, 1, 1], 0, LEGACY_STREAM, params, "the canary");
            this.driver.call("cuStreamSynchronize", LEGACY_STREAM);
            const out = new Float32Array(n);
            new Uint8Array(out.buffer).set(dy.read(0, n * 4));
            const bad = out.findIndex((v, i) => v !== 1 + i);
            if (bad >= 0) return { ok: false, detail: `saxpy[${bad}] = ${out[bad]}, expected ${1 + bad}` };
            return { ok: true, detail: `saxpy of ${n} floats exact`, kernelNs: this.timeCanarySaxpy(fn) };
          } finally {
            dx.free();
            dy.free();
          }
        } finally {
          if (!this.broken) this.driver.call("cuModuleUnload", module);
        }
      }, "canary");
    } catch (err) {
      return { ok: false, detail: (err as Error).message };
    }
  }

  /** The canary's saxpy over CANARY_TIMED_N floats (zeroed: the values stay 0), CUDA events around each repeat's launches. */
  private timeCanarySaxpy(fn: Handle): number {
    const n = CANARY_TIMED_N;
    const dx = this.alloc(n * 4) as CudaArray;
    const dy = this.alloc(n * 4) as CudaArray;
    try {
      const params = this.params(
        [
          { kind: "scalar", value: 2 },
          { kind: "buffer", array: dx },
          { kind: "buffer", array: dy },
          { kind: "scalar", value: n },
        ],
        CANARY_SPEC,
      );
      const launch = () => this.driver.launch(fn, [n / 256, 1, 1], [256, 1, 1], 0, LEGACY_STREAM, params, "the canary");
      launch(); // the first launch outside the timing
      return timeCanary((number) => {
        this.driver.call("cuEventRecord", this.start, LEGACY_STREAM);
        for (let i = 0; i < number; i++) launch();
        this.driver.call("cuEventRecord", this.end, LEGACY_STREAM);
        this.driver.call("cuEventSynchronize", this.end);
        return this.driver.elapsedMs(this.start, this.end) * 1e6;
      }, CANARY_NUMBER);
    } finally {
      dx.free();
      dy.free();
    }
  }

  stats(): BackendStats {
    let bytes = 0;
    for (const a of this.arrays) bytes += a.nbytes;
    const counters: Record<string, number> = {
      calls: this.calls,
      call_ns_total: this.callNs,
      array_bytes: bytes,
      arrays: this.arrays.size,
      modules: this.modules,
    };
    if (!this.broken) {
      const mem = this.driver.memInfo();
      counters.device_memory_free_bytes = mem.free;
      counters.device_memory_total_bytes = mem.total;
    }
    for (const [name, fn] of this.kernels) {
      for (const [k, v] of Object.entries(fn.attributes)) counters[`${name}.${k}`] = v;
    }
    return { counters, info: this.conditions() };
  }

  /** The board's conditions from now to when the returned function is called: what every timing result carries. */
  watchConditions(): () => Record<string, string> {
    const before = this.nvml?.throttle();
    return () => this.conditions(before);
  }

  /**
   * The board, its clocks now and whether it is throttled: since `before`
   * (a sample taken when a timing began), or at this moment alone.
   */
  private conditions(before?: ThrottleSample): Record<string, string> {
    const d = this.device;
    // The throttle state first: right after the timed runs, before the other reads take their time.
    const throttle = this.nvml ? describeThrottling(before, this.nvml.throttle()) : { throttled: "unknown: no NVML on this host" };
    const live = this.nvml?.clocks();
    return {
      kind: this.kind,
      name: d.name,
      arch: d.arch,
      compute_capability: d.computeCapability,
      sm_count: String(d.smCount),
      memory_bytes: String(d.memoryBytes),
      l2_bytes: String(d.l2Bytes),
      driver_version: d.driverVersion,
      device: String(d.ordinal),
      pci_bus_id: d.pciBusId,
      ...(live ?? { sm_clock_mhz: String(d.smClockMhz), mem_clock_mhz: String(d.memClockMhz), clock_source: "driver nominal (no NVML)" }),
      ...throttle,
      ...(this.broken ? { context_lost: this.broken.cuda } : {}),
    };
  }

  clearStats(): void {
    this.calls = 0;
    this.callNs = 0;
  }

  reset(): void {
    for (const a of [...this.arrays]) a.free();
    if (!this.broken) this.dropGraph();
    this.kernels.clear();
    this.clearStats();
  }
}
