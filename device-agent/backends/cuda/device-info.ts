/** Facts about one GPU from the driver: for registration labels and board stats. */
import { FarmError } from "../../../protos/index.ts";
import { CudaDriver, DEV_ATTR } from "./driver.ts";

export interface CudaDeviceInfo {
  ordinal: number;
  name: string;
  /** "sm_90" */
  arch: string;
  computeCapability: string;
  smCount: number;
  memoryBytes: number;
  l2Bytes: number;
  /** CUDA version the driver supports, "13.0". */
  driverVersion: string;
  pciBusId: string;
  /** Nominal clocks from the driver, MHz. */
  smClockMhz: number;
  memClockMhz: number;
  maxThreadsPerBlock: number;
  /** 32-bit registers a block may use in all (what limits threads × registers per thread). */
  maxRegistersPerBlock: number;
  warpSize: number;
  maxSharedPerBlock: number;
  maxSharedPerBlockOptin: number;
  maxBlock: [number, number, number];
  maxGrid: [number, number, number];
}

export function cudaDeviceCount(): number {
  return CudaDriver.get().deviceCount();
}

export function cudaDeviceInfo(ordinal: number): CudaDeviceInfo {
  const d = CudaDriver.get();
  const count = d.deviceCount();
  if (!Number.isInteger(ordinal) || ordinal < 0 || ordinal >= count) {
    throw new FarmError(
      "INVALID_ARGUMENT",
      count === 0
        ? `no CUDA device ${ordinal}: this host has none`
        : `no CUDA device ${ordinal}: this host has ${count} (cuda:0 … cuda:${count - 1}, or cuda:all)`,
      { details: { device: ordinal, devices: count } },
    );
  }
  const dev = d.device(ordinal);
  const a = (attr: number) => d.attribute(dev, attr);
  const major = a(DEV_ATTR.COMPUTE_CAPABILITY_MAJOR);
  const minor = a(DEV_ATTR.COMPUTE_CAPABILITY_MINOR);
  const v = d.driverVersion();
  return {
    ordinal,
    name: d.deviceName(dev),
    arch: `sm_${major}${minor}`,
    computeCapability: `${major}.${minor}`,
    smCount: a(DEV_ATTR.MULTIPROCESSOR_COUNT),
    memoryBytes: d.totalMemory(dev),
    l2Bytes: a(DEV_ATTR.L2_CACHE_SIZE),
    driverVersion: `${Math.floor(v / 1000)}.${(v % 1000) / 10}`,
    pciBusId: d.pciBusId(dev),
    smClockMhz: Math.round(a(DEV_ATTR.CLOCK_RATE) / 1000),
    memClockMhz: Math.round(a(DEV_ATTR.MEMORY_CLOCK_RATE) / 1000),
    maxThreadsPerBlock: a(DEV_ATTR.MAX_THREADS_PER_BLOCK),
    maxRegistersPerBlock: a(DEV_ATTR.MAX_REGISTERS_PER_BLOCK),
    warpSize: a(DEV_ATTR.WARP_SIZE),
    maxSharedPerBlock: a(DEV_ATTR.MAX_SHARED_MEMORY_PER_BLOCK),
    maxSharedPerBlockOptin: a(DEV_ATTR.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
    maxBlock: [a(DEV_ATTR.MAX_BLOCK_DIM_X), a(DEV_ATTR.MAX_BLOCK_DIM_Y), a(DEV_ATTR.MAX_BLOCK_DIM_Z)],
    maxGrid: [a(DEV_ATTR.MAX_GRID_DIM_X), a(DEV_ATTR.MAX_GRID_DIM_Y), a(DEV_ATTR.MAX_GRID_DIM_Z)],
  };
}
