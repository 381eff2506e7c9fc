/**
 * The CUDA driver API, bound with koffi on `libcuda.so.1`: only the driver is
 * needed on a GPU host, no toolkit. Every call goes through `check`, which
 * turns a non-zero CUresult into a FarmError carrying the driver's own name
 * for it (CUDA_ERROR_ILLEGAL_ADDRESS, ...).
 *
 * Handles (contexts, modules, functions, streams, events, graphs) are opaque
 * pointers; they travel as uint64 values (bigint), which is the same thing in
 * the x86-64 and aarch64 calling conventions, so no pointer objects are built
 * per call. Output parameters are small Buffers read after the call.
 */
import koffi from "koffi";
import { FarmError, type FarmErrorCode } from "../../../protos/index.ts";

export type Handle = bigint;
export type DevicePtr = bigint;

/** CUdevice_attribute values used here (cuda.h). */
export const DEV_ATTR = {
  MAX_THREADS_PER_BLOCK: 1,
  MAX_BLOCK_DIM_X: 2,
  MAX_BLOCK_DIM_Y: 3,
  MAX_BLOCK_DIM_Z: 4,
  MAX_GRID_DIM_X: 5,
  MAX_GRID_DIM_Y: 6,
  MAX_GRID_DIM_Z: 7,
  MAX_SHARED_MEMORY_PER_BLOCK: 8,
  WARP_SIZE: 10,
  MAX_REGISTERS_PER_BLOCK: 12,
  CLOCK_RATE: 13,
  MULTIPROCESSOR_COUNT: 16,
  PCI_BUS_ID: 33,
  PCI_DEVICE_ID: 34,
  MEMORY_CLOCK_RATE: 36,
  GLOBAL_MEMORY_BUS_WIDTH: 37,
  L2_CACHE_SIZE: 38,
  PCI_DOMAIN_ID: 50,
  COMPUTE_CAPABILITY_MAJOR: 75,
  COMPUTE_CAPABILITY_MINOR: 76,
  MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: 97,
} as const;

/** CUfunction_attribute values used here. */
export const FUNC_ATTR = {
  MAX_THREADS_PER_BLOCK: 0,
  SHARED_SIZE_BYTES: 1,
  CONST_SIZE_BYTES: 2,
  LOCAL_SIZE_BYTES: 3,
  NUM_REGS: 4,
  PTX_VERSION: 5,
  BINARY_VERSION: 6,
  MAX_DYNAMIC_SHARED_SIZE_BYTES: 8,
} as const;

/**
 * Errors after which the context is unusable: every later call in this
 * process fails the same way, so the worker must be replaced.
 */
const STICKY = new Set([
  "CUDA_ERROR_ILLEGAL_ADDRESS",
  "CUDA_ERROR_LAUNCH_FAILED",
  "CUDA_ERROR_HARDWARE_STACK_ERROR",
  "CUDA_ERROR_ILLEGAL_INSTRUCTION",
  "CUDA_ERROR_MISALIGNED_ADDRESS",
  "CUDA_ERROR_INVALID_ADDRESS_SPACE",
  "CUDA_ERROR_INVALID_PC",
  "CUDA_ERROR_ASSERT",
  "CUDA_ERROR_ECC_UNCORRECTABLE",
  "CUDA_ERROR_LAUNCH_TIMEOUT",
  "CUDA_ERROR_CONTEXT_IS_DESTROYED",
]);

/** The driver's error, as a FarmError: details.cuda is its name, details.sticky whether the context is lost. */
export class CudaError extends FarmError {
  constructor(
    code: FarmErrorCode,
    message: string,
    readonly cuda: string,
    readonly sticky: boolean,
  ) {
    super(code, message, { details: { cuda, sticky } });
  }
}

/** A farm code for a driver error met in `call`. */
function codeFor(name: string, call: string): FarmErrorCode {
  if (name === "CUDA_ERROR_OUT_OF_MEMORY") return "OUT_OF_MEMORY";
  if (name === "CUDA_ERROR_NO_BINARY_FOR_GPU" || name === "CUDA_ERROR_UNSUPPORTED_PTX_VERSION" || name === "CUDA_ERROR_INVALID_PTX") return "TARGET_MISMATCH";
  if (call.startsWith("cuModule")) return "LOAD_ERROR";
  if (call === "cuLaunchKernel" && (name === "CUDA_ERROR_INVALID_VALUE" || name === "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES")) return "LAUNCH_ERROR";
  return "DEVICE_ERROR";
}

type Fn = (...args: unknown[]) => number;

export class CudaDriver {
  private readonly f: Record<string, Fn> = {};
  private readonly out8 = Buffer.alloc(8);

  private constructor(private readonly lib: ReturnType<typeof koffi.load>) {
    const U64 = "uint64_t";
    const P = "void *";
    const decl: Array<[string, string[]]> = [
      ["cuInit", ["uint32_t"]],
      ["cuDriverGetVersion", [P]],
      ["cuDeviceGetCount", [P]],
      ["cuDeviceGet", [P, "int"]],
      ["cuDeviceGetName", [P, "int", "int"]],
      ["cuDeviceGetAttribute", [P, "int", "int"]],
      ["cuDeviceTotalMem_v2", [P, "int"]],
      ["cuDeviceGetPCIBusId", [P, "int", "int"]],
      ["cuDevicePrimaryCtxRetain", [P, "int"]],
      ["cuCtxSetCurrent", [U64]],
      ["cuCtxSynchronize", []],
      ["cuMemGetInfo_v2", [P, P]],
      ["cuModuleLoadData", [P, P]],
      ["cuModuleUnload", [U64]],
      ["cuModuleGetFunction", [P, U64, "const char *"]],
      ["cuFuncGetAttribute", [P, "int", U64]],
      ["cuFuncSetAttribute", [U64, "int", "int"]],
      ["cuMemAlloc_v2", [P, "size_t"]],
      ["cuMemFree_v2", [U64]],
      ["cuMemcpyHtoD_v2", [U64, P, "size_t"]],
      ["cuMemcpyDtoH_v2", [P, U64, "size_t"]],
      ["cuMemsetD8_v2", [U64, "uint8_t", "size_t"]],
      ["cuMemsetD32Async", [U64, "uint32_t", "size_t", U64]],
      ["cuLaunchKernel", [U64, "uint32_t", "uint32_t", "uint32_t", "uint32_t", "uint32_t", "uint32_t", "uint32_t", U64, P, P]],
      ["cuStreamCreate", [P, "uint32_t"]],
      ["cuStreamSynchronize", [U64]],
      ["cuStreamBeginCapture_v2", [U64, "int"]],
      ["cuStreamEndCapture", [U64, P]],
      ["cuGraphInstantiateWithFlags", [P, U64, "uint64_t"]],
      ["cuGraphLaunch", [U64, U64]],
      ["cuGraphExecDestroy", [U64]],
      ["cuGraphDestroy", [U64]],
      ["cuEventCreate", [P, "uint32_t"]],
      ["cuEventRecord", [U64, U64]],
      ["cuEventSynchronize", [U64]],
    ];
    for (const [name, params] of decl) this.f[name] = lib.func(name, "int", params) as Fn;
    this.f.cuGetErrorName = lib.func("int cuGetErrorName(int error, _Out_ const char **name)") as Fn;
    // cuEventElapsedTime became _v2 in CUDA 12.8; older drivers only have the first.
    this.f.cuEventElapsedTime = this.bindFirst(["cuEventElapsedTime_v2", "cuEventElapsedTime"], [P, U64, U64]);
  }

  private bindFirst(names: string[], params: string[]): Fn {
    for (const name of names) {
      try {
        return this.lib.func(name, "int", params) as Fn;
      } catch {
        // not in this driver: try the next
      }
    }
    throw new FarmError("DEVICE_ERROR", `the NVIDIA driver has none of ${names.join(", ")}`);
  }

  private static instance: CudaDriver | undefined;

  /** The driver, loaded and initialised once per process. */
  static get(): CudaDriver {
    if (!CudaDriver.instance) {
      let lib: ReturnType<typeof koffi.load>;
      try {
        lib = koffi.load("libcuda.so.1");
      } catch (err) {
        throw new FarmError(
          "DEVICE_ERROR",
          `no NVIDIA driver on this host: cannot load libcuda.so.1 (${(err as Error).message}); CUDA boards need the NVIDIA driver installed`,
          { cause: err },
        );
      }
      const driver = new CudaDriver(lib);
      driver.check("cuInit", driver.f.cuInit!(0));
      CudaDriver.instance = driver;
    }
    return CudaDriver.instance;
  }

  /** The driver's name for a CUresult. */
  errorName(rc: number): string {
    const out: (string | null)[] = [null];
    if (this.f.cuGetErrorName!(rc, out) !== 0 || !out[0]) return `CUDA error ${rc}`;
    return out[0];
  }

  /** Throws the driver error for a failed `call`. */
  check(call: string, rc: number, context?: string): void {
    if (rc === 0) return;
    const name = this.errorName(rc);
    const sticky = STICKY.has(name);
    const what = context ? `${context}: ` : "";
    throw new CudaError(codeFor(name, call), `${what}${call} failed with ${name}${sticky ? " (the device context is lost)" : ""}`, name, sticky);
  }

  call(name: string, ...args: unknown[]): void {
    this.check(name, this.f[name]!(...args));
  }

  /** Calls `name` with an 8-byte output first argument and returns it. */
  private out(name: string, args: unknown[], context?: string): Buffer {
    this.out8.fill(0);
    this.check(name, this.f[name]!(this.out8, ...args), context);
    return this.out8;
  }

  driverVersion(): number {
    return this.out("cuDriverGetVersion", []).readInt32LE(0);
  }
  deviceCount(): number {
    return this.out("cuDeviceGetCount", []).readInt32LE(0);
  }
  device(ordinal: number): number {
    return this.out("cuDeviceGet", [ordinal]).readInt32LE(0);
  }
  deviceName(dev: number): string {
    const buf = Buffer.alloc(256);
    this.check("cuDeviceGetName", this.f.cuDeviceGetName!(buf, buf.length, dev));
    return buf.subarray(0, buf.indexOf(0)).toString();
  }
  pciBusId(dev: number): string {
    const buf = Buffer.alloc(64);
    this.check("cuDeviceGetPCIBusId", this.f.cuDeviceGetPCIBusId!(buf, buf.length, dev));
    return buf.subarray(0, buf.indexOf(0)).toString();
  }
  attribute(dev: number, attr: number): number {
    return this.out("cuDeviceGetAttribute", [attr, dev]).readInt32LE(0);
  }
  totalMemory(dev: number): number {
    return Number(this.out("cuDeviceTotalMem_v2", [dev]).readBigUInt64LE(0));
  }
  primaryContext(dev: number): Handle {
    return this.out("cuDevicePrimaryCtxRetain", [dev]).readBigUInt64LE(0);
  }
  memInfo(): { free: number; total: number } {
    const free = Buffer.alloc(8);
    const total = Buffer.alloc(8);
    this.check("cuMemGetInfo_v2", this.f.cuMemGetInfo_v2!(free, total));
    return { free: Number(free.readBigUInt64LE(0)), total: Number(total.readBigUInt64LE(0)) };
  }
  loadModule(image: Uint8Array, context: string): Handle {
    return this.out("cuModuleLoadData", [image], context).readBigUInt64LE(0);
  }
  getFunction(module: Handle, name: string): Handle {
    return this.out("cuModuleGetFunction", [module, name], `kernel "${name}"`).readBigUInt64LE(0);
  }
  funcAttribute(fn: Handle, attr: number): number {
    return this.out("cuFuncGetAttribute", [attr, fn]).readInt32LE(0);
  }
  memAlloc(nbytes: number): DevicePtr {
    return this.out("cuMemAlloc_v2", [nbytes], `allocating ${nbytes} bytes`).readBigUInt64LE(0);
  }
  createStream(flags: number): Handle {
    return this.out("cuStreamCreate", [flags]).readBigUInt64LE(0);
  }
  createEvent(): Handle {
    return this.out("cuEventCreate", [0]).readBigUInt64LE(0);
  }
  endCapture(stream: Handle): Handle {
    const graph = Buffer.alloc(8);
    this.check("cuStreamEndCapture", this.f.cuStreamEndCapture!(stream, graph));
    return graph.readBigUInt64LE(0);
  }
  instantiateGraph(graph: Handle): Handle {
    return this.out("cuGraphInstantiateWithFlags", [graph, 0n]).readBigUInt64LE(0);
  }
  elapsedMs(start: Handle, end: Handle): number {
    return this.out("cuEventElapsedTime", [start, end]).readFloatLE(0);
  }

  /** cuLaunchKernel: `params` is the kernelParams array (one pointer per argument). */
  launch(fn: Handle, grid: readonly number[], block: readonly number[], sharedMemBytes: number, stream: Handle, params: Buffer | null, context: string): void {
    this.check(
      "cuLaunchKernel",
      this.f.cuLaunchKernel!(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], sharedMemBytes, stream, params, null),
      context,
    );
  }
}
