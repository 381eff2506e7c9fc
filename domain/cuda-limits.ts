/**
 * What decides whether a CUDA kernel can launch at all, shared by the board
 * (which reports its GPU's limits in its registration, typed: BoardSpec.cuda_limits) and the
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
import type { CudaLaunchLimitsMessage, CudaLaunchLimitsMessage__Output } from "../protos/index.ts";

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

/** The limits as the contract carries them (BoardSpec.cuda_limits, BoardInfo.cuda_limits). */
export function cudaLaunchLimitsToWire(l: CudaLaunchLimits): CudaLaunchLimitsMessage {
  return {
    max_threads_per_block: l.maxThreadsPerBlock,
    max_block: [...l.maxBlock],
    max_grid: [...l.maxGrid],
    max_shared_per_block: l.maxSharedPerBlock,
    max_shared_per_block_optin: l.maxSharedPerBlockOptin,
    max_registers_per_block: l.maxRegistersPerBlock,
    warp_size: l.warpSize,
  };
}

/**
 * The limits a CUDA board registered, or undefined when it did not say them
 * (another kind of board) or said them malformed — then the board alone
 * decides at launch, as it always does too.
 */
export function cudaLaunchLimitsFromWire(m: CudaLaunchLimitsMessage__Output | null | undefined): CudaLaunchLimits | undefined {
  if (!m) return undefined;
  const dims = (v: readonly number[]) => (v.length === 3 && v.every((x) => x > 0) ? ([v[0]!, v[1]!, v[2]!] as const) : undefined);
  const [maxBlock, maxGrid] = [dims(m.max_block), dims(m.max_grid)];
  const scalars = [m.max_threads_per_block, m.max_shared_per_block, m.max_shared_per_block_optin, m.max_registers_per_block, m.warp_size];
  if (!maxBlock || !maxGrid || !scalars.every((x) => x > 0)) return undefined;
  return {
    maxThreadsPerBlock: m.max_threads_per_block,
    maxBlock,
    maxGrid,
    maxSharedPerBlock: m.max_shared_per_block,
    maxSharedPerBlockOptin: m.max_shared_per_block_optin,
    maxRegistersPerBlock: m.max_registers_per_block,
    warpSize: m.warp_size,
  };
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
  if (threads > limits.maxThreadsPerBlock)
    return `block ${launch.block.join("×")} = ${threads} threads, more than the ${limits.maxThreadsPerBlock} a block may have`;
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
  if (r.sharedMemBytes > limits.maxSharedPerBlock)
    return `kernel ${kernel} declares ${r.sharedMemBytes} bytes of static shared memory, more than the ${limits.maxSharedPerBlock} allowed (beyond it, shared memory must be dynamic)`;
  if (shared > limits.maxSharedPerBlockOptin) {
    return `kernel ${kernel} needs ${shared} bytes of shared memory per block (${r.sharedMemBytes} static + ${launch.sharedMemBytes} dynamic), more than the ${limits.maxSharedPerBlockOptin} a block may have`;
  }
  return undefined;
}
