/**
 * The CUDA timing-fidelity workloads: kernels of kernels.cu with their launch
 * configurations and arguments, shared by the native run (bench/lib/
 * native-cuda.ts) and the farm run so both time exactly the same launches.
 * They span ~5 µs to a few ms per launch on an H100.
 */
import { fileURLToPath } from "node:url";
import type { NativeArg } from "../lib/native-cuda.ts";

/** Absolute path of the kernels' source. */
export const KERNELS_CU = fileURLToPath(new URL("./kernels.cu", import.meta.url));

export interface CudaWorkload {
  name: string;
  kernel: string;
  grid: [number, number, number];
  block: [number, number, number];
  sharedMemBytes: number;
  /** Kernel arguments in kernel order; buffers are filled with `fill` (default 1.0). */
  args: NativeArg[];
  /** kernelfarm parameter declarations in kernel order, e.g. "float32* x", "int32 n", "float32 a". */
  params: string[];
  /** Bytes moved per launch (read + written), for bandwidth. */
  bytes?: number;
  /** Floating-point operations per launch (an FMA counts 2). */
  flops?: number;
  /** Rough per-launch time on an H100 SXM, µs. */
  expectUs: number;
}

const MiB = 1 << 20;
const F32 = 4;
/** copy_f32 / saxpy: 256 threads, one float4 per thread (the kernels also handle any n). */
const STREAM_BLOCK = 256;

function copy(name: string, bytesEach: number, expectUs: number): CudaWorkload {
  const n = bytesEach / F32;
  return {
    name,
    kernel: "copy_f32",
    grid: [Math.ceil(n / 4 / STREAM_BLOCK), 1, 1],
    block: [STREAM_BLOCK, 1, 1],
    sharedMemBytes: 0,
    args: [{ buf: bytesEach, fill: 1 }, { buf: bytesEach, fill: 0 }, { i32: n }],
    params: ["float32* in", "float32* out", "int32 n"],
    bytes: 2 * bytesEach,
    expectUs,
  };
}

function saxpy(name: string, n: number, expectUs: number): CudaWorkload {
  return {
    name,
    kernel: "saxpy",
    grid: [Math.ceil(n / 4 / STREAM_BLOCK), 1, 1],
    block: [STREAM_BLOCK, 1, 1],
    sharedMemBytes: 0,
    // y grows by 0.5 a launch: finite and normal for any realistic launch count.
    args: [{ f32: 0.5 }, { buf: n * F32, fill: 1 }, { buf: n * F32, fill: 0 }, { i32: n }],
    params: ["float32 a", "float32* x", "float32* y", "int32 n"],
    bytes: 3 * n * F32,
    flops: 2 * n,
    expectUs,
  };
}

/** sgemm_tiled: 64x64 block tile, block (16,16,1), grid (N/64, M/64, 1); M, N, K multiples of 64. */
function sgemm(name: string, m: number, n: number, k: number, expectUs: number): CudaWorkload {
  if (m % 64 || n % 64 || k % 64) throw new Error(`${name}: sgemm_tiled needs M, N, K multiples of 64`);
  return {
    name,
    kernel: "sgemm_tiled",
    grid: [n / 64, m / 64, 1],
    block: [16, 16, 1],
    sharedMemBytes: 0,
    args: [{ buf: m * k * F32, fill: 1 }, { buf: k * n * F32, fill: 1 }, { buf: m * n * F32, fill: 0 }, { i32: m }, { i32: n }, { i32: k }],
    params: ["float32* A", "float32* B", "float32* C", "int32 M", "int32 N", "int32 K"],
    flops: 2 * m * n * k,
    expectUs,
  };
}

/**
 * conv2d_3x3_nchw: 4 output channels x an 8x8 output tile per block, block
 * (32,16,1), grid (ceil(K/4), ceil(H/8)*ceil(W/8), 1).
 */
function conv2d(name: string, c: number, h: number, w: number, k: number, expectUs: number): CudaWorkload {
  return {
    name,
    kernel: "conv2d_3x3_nchw",
    grid: [Math.ceil(k / 4), Math.ceil(h / 8) * Math.ceil(w / 8), 1],
    block: [32, 16, 1],
    sharedMemBytes: 0,
    args: [
      { buf: c * h * w * F32, fill: 1 },
      { buf: k * c * 9 * F32, fill: 1 / 4096 },
      { buf: k * h * w * F32, fill: 0 },
      { i32: c },
      { i32: h },
      { i32: w },
      { i32: k },
    ],
    params: ["float32* in", "float32* w", "float32* out", "int32 C", "int32 H", "int32 W", "int32 K"],
    flops: 2 * k * c * 9 * h * w,
    expectUs,
  };
}

/**
 * expectUs: medians measured with native-timer on an H100 80GB HBM3 (SXM).
 * copy-4MiB runs from L2 (8 MiB moved, 50 MiB of L2), so its bandwidth is not
 * DRAM's; copy-256MiB matched cuMemcpyDtoD (~2.98 TB/s read + write).
 */
export const WORKLOADS: CudaWorkload[] = [
  copy("copy-4MiB", 4 * MiB, 4),
  conv2d("conv2d-resnet-512x7x7", 512, 7, 7, 512, 20),
  saxpy("saxpy-32MiB", 8 * MiB, 36),
  sgemm("sgemm-1024", 1024, 1024, 1024, 71),
  copy("copy-256MiB", 256 * MiB, 180),
  sgemm("sgemm-4096", 4096, 4096, 4096, 4300),
];
