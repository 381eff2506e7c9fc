/**
 * What decides whether a CUDA kernel can launch at all, shared by the board
 * (which reports its GPU's limits in its registration's capabilities) and the
 * host (which refuses a configuration that cannot launch before it uploads
 * anything: measure()'s INVALID_CONFIG).
 *
 * The host knows a kernel's resources from ptxas's report (registers per
 * thread, static shared memory); the board knows them from the driver. The
 * host's verdict is a prediction from the same rules the driver applies
 * (cuLaunchKernel's CUDA_ERROR_INVALID_VALUE and _LAUNCH_OUT_OF_RESOURCES);
 * the board still checks every launch with the driver's own figures
 * (device-agent/backends/cuda/backend.ts), so what the host cannot decide —
 * a `__launch_bounds__` smaller than the block, say — is caught there.
 */

export interface CudaLaunchLimits {
  maxThreadsPerBlock: number;
  maxBlock: readonly [number, number, number];
  maxGrid: readonly [number, number, number];
  /** Shared memory a block gets without opting in (48 KiB), and with (227 KiB on an H100). */
  maxSharedPerBlock: number;
  maxSharedPerBlockOptin: number;
  /** 32-bit registers one block may hold in all (65,536 since Kepler). */
  maxRegistersPerBlock: number;
  warpSize: number;
}

/** The resources of one compiled kernel that a launch depends on (ptxas -v, or the driver's function attributes). */
export interface KernelLaunchResources {
  /** Registers per thread. */
  registers: number;
  /** Static shared memory, bytes per block. */
  sharedMemBytes: number;
}

/** A launch: grid and block as [x, y, z], and dynamic shared memory in bytes. */
export interface LaunchShape {
  grid: readonly number[];
  block: readonly number[];
  sharedMemBytes: number;
}

/**
 * Registers are allocated per warp in units of 256 (every architecture since
 * compute capability 3.0): a warp of 32 threads at 70 registers holds
 * ceil(70 × 32 / 256) × 256 = 2,304 of them.
 */
const REGISTER_ALLOCATION_UNIT = 256;

const CAPABILITY = {
  maxThreadsPerBlock: "max_threads_per_block",
  maxBlock: "max_block_dims",
  maxGrid: "max_grid_dims",
  maxSharedPerBlock: "max_shared_bytes_per_block",
  maxSharedPerBlockOptin: "max_shared_bytes_per_block_optin",
  maxRegistersPerBlock: "max_registers_per_block",
  warpSize: "warp_size",
} as const;

/** The limits as registration capabilities (string values; dimensions as "x,y,z"). */
export function cudaLaunchLimitsCapabilities(l: CudaLaunchLimits): Record<string, string> {
  return Object.fromEntries(
    Object.entries(CAPABILITY).map(([field, name]) => {
      const v = l[field as keyof CudaLaunchLimits];
      return [name, Array.isArray(v) ? v.join(",") : String(v)];
    }),
  );
}

/** The limits a CUDA board registered, or undefined when it did not say (an older agent, another kind of board). */
export function cudaLaunchLimitsFrom(capabilities: Readonly<Record<string, string>> | undefined): CudaLaunchLimits | undefined {
  if (!capabilities) return undefined;
  const out: Record<string, number | number[]> = {};
  for (const [field, name] of Object.entries(CAPABILITY)) {
    const raw = capabilities[name];
    if (raw === undefined) return undefined;
    const values = raw.split(",").map(Number);
    if (!values.every((v) => Number.isInteger(v) && v > 0)) return undefined;
    const dims = field === "maxBlock" || field === "maxGrid";
    if (dims ? values.length !== 3 : values.length !== 1) return undefined;
    out[field] = dims ? values : values[0]!;
  }
  return out as unknown as CudaLaunchLimits;
}

/** Registers a block of `threads` threads at `registers` each takes from the register file. */
export function blockRegisters(threads: number, registers: number, warpSize: number): number {
  const warps = Math.ceil(threads / warpSize);
  return warps * Math.ceil((registers * warpSize) / REGISTER_ALLOCATION_UNIT) * REGISTER_ALLOCATION_UNIT;
}

/**
 * Why `kernel` cannot launch as `launch` on a GPU with `limits`, or undefined
 * when it can. The message names the figure and the limit it breaks.
 */
export function cudaLaunchProblem(kernel: string, r: KernelLaunchResources, launch: LaunchShape, limits: CudaLaunchLimits): string | undefined {
  const dims = ["x", "y", "z"];
  const threads = launch.block.reduce((a, b) => a * b, 1);
  if (threads > limits.maxThreadsPerBlock) return `block ${launch.block.join("×")} = ${threads} threads, more than the ${limits.maxThreadsPerBlock} a block may have`;
  for (let i = 0; i < 3; i++) {
    const b = launch.block[i] ?? 1;
    if (b > limits.maxBlock[i]!) return `block ${launch.block.join("×")}: ${dims[i]} is ${b}, at most ${limits.maxBlock[i]}`;
    const g = launch.grid[i] ?? 1;
    if (g > limits.maxGrid[i]!) return `grid ${launch.grid.join("×")}: ${dims[i]} is ${g}, at most ${limits.maxGrid[i]}`;
  }
  const used = blockRegisters(threads, r.registers, limits.warpSize);
  if (used > limits.maxRegistersPerBlock) {
    return `kernel ${kernel} uses ${r.registers} registers per thread: ${threads} threads take ${used} registers, more than the ${limits.maxRegistersPerBlock} a block may have`;
  }
  const shared = r.sharedMemBytes + launch.sharedMemBytes;
  if (r.sharedMemBytes > limits.maxSharedPerBlock) return `kernel ${kernel} declares ${r.sharedMemBytes} bytes of static shared memory, more than the ${limits.maxSharedPerBlock} allowed (beyond it, shared memory must be dynamic)`;
  if (shared > limits.maxSharedPerBlockOptin) {
    return `kernel ${kernel} needs ${shared} bytes of shared memory per block (${r.sharedMemBytes} static + ${launch.sharedMemBytes} dynamic), more than the ${limits.maxSharedPerBlockOptin} a block may have`;
  }
  return undefined;
}
