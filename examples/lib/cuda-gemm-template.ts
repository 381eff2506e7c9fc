/**
 * A tunable CUDA SGEMM template (C = A·B, row-major float32), in the spirit of
 * autotvm's dense/conv2d templates for NVIDIA GPUs, with the structure that
 * makes a SIMT SGEMM fast on Hopper:
 *
 * - a block computes a BM×BN tile of C, staging BK-deep slices of A and B
 *   through shared memory (A transposed, so both are read along M and N);
 * - its warps split the block tile into warp tiles, and a warp's 32 lanes
 *   split a warp tile as `warp_y` × (32 / `warp_y`) threads;
 * - a thread accumulates TM×TN elements of C in registers, as (TM/4)×(TN/4)
 *   4×4 pieces strided over the warp tile, so every shared-memory read is a
 *   float4 that lanes either share (broadcast) or take from distinct banks, and
 *   every store of C is a float4;
 * - with `buffers=2`, the next slice is loaded from global memory into
 *   registers while the current one is computed, then stored into the other
 *   shared buffer: one barrier per slice instead of two, and the load latency
 *   hidden behind the arithmetic.
 *
 * The knobs are baked into the generated source as `#define`s, so each
 * configuration is its own module — the farm compiles them in parallel and
 * caches them by content.
 *
 * | knob | meaning |
 * |---|---|
 * | BM, BN | block tile of C |
 * | BK | depth of a shared-memory slice (its loop is unrolled) |
 * | TM, TN | thread tile of C (registers), multiples of 4 |
 * | warp_y | lanes of a warp along M (32 / warp_y along N): the warp tile is (TM·warp_y)×(TN·32/warp_y) |
 * | buffers | 1: load a slice, barrier, compute, barrier; 2: register prefetch into a second buffer, one barrier |
 * | min_blocks | `__launch_bounds__`'s blocks per SM: 2 caps registers so that two blocks fit |
 * | pad | floats added to each row of A's transposed tile (bank conflicts of its stores) |
 *
 * Global loads and stores are float4s, so K and N must be multiples of 4.
 *
 * Pure code, no farm: the tuning example and its test import it.
 */
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import { compileCuda, type CudaCompiledModule, type LaunchDecl, type MeasureArg, type RandomFill } from "kernelfarm";
import type { Config } from "./search.ts";

export const GEMM_SPACE = {
  BM: [32, 64, 128, 256],
  BN: [32, 64, 128, 256],
  BK: [8, 16, 32],
  TM: [4, 8, 16],
  TN: [4, 8, 16],
  warp_y: [2, 4, 8, 16],
  buffers: [1, 2],
  min_blocks: [1, 2],
  pad: [0, 4],
} as const;

export type GemmConfig = Config<typeof GEMM_SPACE>;

/** C (M×N) = A (M×K) · B (K×N). */
export interface GemmProblem {
  m: number;
  n: number;
  k: number;
}

export const GEMM_FUNCTION = "gemm";
export const GEMM_PARAMS = ["float32* A", "float32* B", "float32* C", "int32 M", "int32 N", "int32 K"] as const;

/** Static shared memory a block may have without opting in (and what this template declares). */
export const MAX_STATIC_SHARED_BYTES = 48 * 1024;
export const MAX_THREADS_PER_BLOCK = 1024;
/** More accumulators than this per thread spill to local memory whatever the compiler does. */
export const MAX_ACCUMULATORS = 128;
const WARP = 32;

/** The warp tile, rows × columns of C. */
export function gemmWarpTile(c: GemmConfig): [number, number] {
  return [c.TM * c.warp_y, c.TN * (WARP / c.warp_y)];
}

export function gemmThreads(c: GemmConfig): number {
  const [wm, wn] = gemmWarpTile(c);
  return (c.BM / wm) * (c.BN / wn) * WARP;
}

export function gemmSharedBytes(c: GemmConfig): number {
  return c.buffers * c.BK * (c.BM + c.pad + c.BN) * 4;
}

/**
 * Why `c` cannot run on `p` (it would not compile, not launch, or not cover
 * C exactly), or undefined when it can. Checked before anything is compiled.
 */
export function gemmConfigProblem(c: GemmConfig, p: GemmProblem): string | undefined {
  const [wm, wn] = gemmWarpTile(c);
  if (c.BM % wm !== 0 || c.BN % wn !== 0)
    return `the warp tile ${wm}×${wn} (thread tile ${c.TM}×${c.TN}, ${c.warp_y}×${WARP / c.warp_y} lanes) does not divide the block tile ${c.BM}×${c.BN}`;
  const threads = gemmThreads(c);
  if (threads > MAX_THREADS_PER_BLOCK) return `${threads} threads per block (at most ${MAX_THREADS_PER_BLOCK})`;
  if (c.TM * c.TN > MAX_ACCUMULATORS) return `${c.TM * c.TN} accumulators per thread (at most ${MAX_ACCUMULATORS})`;
  for (const [what, floats] of [
    ["A", c.BM * c.BK],
    ["B", c.BK * c.BN],
  ] as const) {
    if ((floats / 4) % threads !== 0) return `the ${floats / 4} float4 loads of a slice of ${what} do not divide among ${threads} threads`;
  }
  if (gemmSharedBytes(c) > MAX_STATIC_SHARED_BYTES) return `${gemmSharedBytes(c)} bytes of shared memory (at most ${MAX_STATIC_SHARED_BYTES})`;
  if (p.m % c.BM !== 0 || p.n % c.BN !== 0 || p.k % c.BK !== 0)
    return `the block tile ${c.BM}×${c.BN}×${c.BK} does not divide the problem ${p.m}×${p.n}×${p.k}`;
  if (p.k % 4 !== 0 || p.n % 4 !== 0) return `rows of A and B are not aligned for float4 loads (K ${p.k} and N ${p.n} must be multiples of 4)`;
  return undefined;
}

export function gemmLaunch(c: GemmConfig, p: GemmProblem): LaunchDecl {
  return { grid: [p.n / c.BN, p.m / c.BM], block: gemmThreads(c) };
}

/** The CUDA C++ source of configuration `c`: one kernel, `extern "C" __global__ void gemm(A, B, C, M, N, K)`. */
export function gemmSource(c: GemmConfig): string {
  const [wm, wn] = gemmWarpTile(c);
  const double = c.buffers === 2;
  return `// kernelfarm GEMM template: ${Object.entries(c)
    .map(([k, v]) => `${k}=${v}`)
    .join(" ")}
#define BM ${c.BM}
#define BN ${c.BN}
#define BK ${c.BK}
#define TM ${c.TM}
#define TN ${c.TN}
#define WM ${wm}
#define WN ${wn}
#define WY ${c.warp_y}
#define WX ${WARP / c.warp_y}
#define APAD ${c.pad}
#define BUFFERS ${c.buffers}
#define THREADS ${gemmThreads(c)}
#define WARPS_N (BN / WN)
#define LOADS_A (BM * BK / 4 / THREADS)
#define LOADS_B (BK * BN / 4 / THREADS)

extern "C" __global__ void __launch_bounds__(THREADS, ${c.min_blocks})
${GEMM_FUNCTION}(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
  __shared__ __align__(16) float As[BUFFERS][BK][BM + APAD];
  __shared__ __align__(16) float Bs[BUFFERS][BK][BN];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  // This thread's rows of C start at m0 (then every WY * 4 rows, 4 at a time), its columns at n0 (every WX * 4).
  const int m0 = (warp / WARPS_N) * WM + (lane / WX) * 4, n0 = (warp % WARPS_N) * WN + (lane % WX) * 4;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const float* Ab = A + (size_t)row0 * K;
  const float* Bb = B + col0;
  float4 ra[LOADS_A], rb[LOADS_B];
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; i++)
#pragma unroll
    for (int j = 0; j < TN; j++) acc[i][j] = 0.0f;

  // A slice of A (BM×BK, read along K) and of B (BK×BN, read along N) into registers, float4s, all threads taking turns...
  auto load = [&](int k0) {
#pragma unroll
    for (int l = 0; l < LOADS_A; l++) {
      const int t = tid + l * THREADS, r = t / (BK / 4), k = (t % (BK / 4)) * 4;
      ra[l] = *reinterpret_cast<const float4*>(Ab + (size_t)r * K + k0 + k);
    }
#pragma unroll
    for (int l = 0; l < LOADS_B; l++) {
      const int t = tid + l * THREADS, k = t / (BN / 4), n = (t % (BN / 4)) * 4;
      rb[l] = *reinterpret_cast<const float4*>(Bb + (size_t)(k0 + k) * N + n);
    }
  };
  // ...and from registers into shared buffer s, A transposed.
  auto store = [&](int s) {
#pragma unroll
    for (int l = 0; l < LOADS_A; l++) {
      const int t = tid + l * THREADS, r = t / (BK / 4), k = (t % (BK / 4)) * 4;
      As[s][k][r] = ra[l].x; As[s][k + 1][r] = ra[l].y; As[s][k + 2][r] = ra[l].z; As[s][k + 3][r] = ra[l].w;
    }
#pragma unroll
    for (int l = 0; l < LOADS_B; l++) {
      const int t = tid + l * THREADS, k = t / (BN / 4), n = (t % (BN / 4)) * 4;
      *reinterpret_cast<float4*>(&Bs[s][k][n]) = rb[l];
    }
  };
  auto compute = [&](int s) {
#pragma unroll
    for (int k = 0; k < BK; k++) {
      float a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM / 4; i++) {
        const float4 v = *reinterpret_cast<const float4*>(&As[s][k][m0 + i * WY * 4]);
        a[4 * i] = v.x; a[4 * i + 1] = v.y; a[4 * i + 2] = v.z; a[4 * i + 3] = v.w;
      }
#pragma unroll
      for (int j = 0; j < TN / 4; j++) {
        const float4 v = *reinterpret_cast<const float4*>(&Bs[s][k][n0 + j * WX * 4]);
        b[4 * j] = v.x; b[4 * j + 1] = v.y; b[4 * j + 2] = v.z; b[4 * j + 3] = v.w;
      }
#pragma unroll
      for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
  };

${
  double
    ? `  // Two buffers: while slice s is computed, the next one travels from global memory into registers, then into
  // buffer s ^ 1. One barrier per slice suffices: a thread writes buffer s ^ 1 only after every thread passed the
  // barrier that ended the slice which last read it.
  load(0);
  store(0);
  __syncthreads();
  int s = 0;
  for (int k0 = 0; k0 < K; k0 += BK) {
    const bool next = k0 + BK < K;
    if (next) load(k0 + BK);
    compute(s);
    if (next) {
      store(s ^ 1);
      __syncthreads();
      s ^= 1;
    }
  }`
    : `  for (int k0 = 0; k0 < K; k0 += BK) {
    load(k0);
    store(0);
    __syncthreads();
    compute(0);
    __syncthreads();
  }`
}
#pragma unroll
  for (int i = 0; i < TM / 4; i++)
#pragma unroll
    for (int r = 0; r < 4; r++)
#pragma unroll
      for (int j = 0; j < TN / 4; j++) {
        const float* v = &acc[4 * i + r][4 * j];
        *reinterpret_cast<float4*>(&C[(size_t)(row0 + m0 + i * WY * 4 + r) * N + col0 + n0 + j * WX * 4]) = make_float4(v[0], v[1], v[2], v[3]);
      }
}
`;
}

/** A naive kernel, one thread per element of C and no shared memory: the baseline the tuned ones are compared with. */
export const NAIVE_GEMM_SOURCE = `// kernelfarm GEMM baseline: one thread per element, operands straight from global memory
extern "C" __global__ void ${GEMM_FUNCTION}(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;
  float s = 0.0f;
  for (int k = 0; k < K; k++) s = fmaf(A[(size_t)row * K + k], B[(size_t)k * N + col], s);
  C[(size_t)row * N + col] = s;
}
`;

export function naiveGemmLaunch(p: GemmProblem): LaunchDecl {
  return { grid: [Math.ceil(p.n / 16), Math.ceil(p.m / 16)], block: [16, 16] };
}

export interface CompileGemmOptions {
  arch?: string;
  /** The compile cache directory, or false (default: compileCuda's). */
  cache?: string | false;
}

/** Compiles configuration `c` (or the naive baseline) into a module with one kernel, `gemm`, launched at call time. */
export function compileGemm(c: GemmConfig | "naive", opts: CompileGemmOptions = {}): Promise<CudaCompiledModule> {
  return compileCuda(c === "naive" ? NAIVE_GEMM_SOURCE : gemmSource(c), {
    functions: { [GEMM_FUNCTION]: GEMM_PARAMS },
    ...(opts.arch ? { arch: opts.arch } : {}),
    ...(opts.cache !== undefined ? { cache: opts.cache } : {}),
    fileName: "gemm.cu",
  });
}

type SeededArg = Extract<MeasureArg, { random: RandomFill }>;

/**
 * The operands A (M×K) and B (K×N) as seeded inputs, generated on the board
 * (randomArray gives the host the same): whole numbers −4 … 4, so every
 * partial sum of products is an integer below 2²⁴ for K up to 2²⁰ and float32
 * computes it exactly in any summation order. The tuned kernels can then be
 * checked with no tolerance.
 */
export function gemmOperands(p: GemmProblem, seed: number): [SeededArg, SeededArg] {
  const ints = (s: number) => ({ seed: s >>> 0, low: -4, high: 4, integers: true });
  return [
    { random: ints(seed * 2), shape: [p.m, p.k], dtype: "float32" },
    { random: ints(seed * 2 + 1), shape: [p.k, p.n], dtype: "float32" },
  ];
}

/** C = A·B on the host (i-k-j order, float64 accumulators): about 3 s for 1024³ in plain JavaScript. */
export function hostGemm(a: Float32Array, b: Float32Array, p: GemmProblem): Float32Array {
  const c = new Float64Array(p.m * p.n);
  for (let i = 0; i < p.m; i++) {
    const ci = i * p.n;
    for (let k = 0; k < p.k; k++) {
      const x = a[i * p.k + k]!;
      if (x === 0) continue;
      const bk = k * p.n;
      for (let j = 0; j < p.n; j++) c[ci + j]! += x * b[bk + j]!;
    }
  }
  return Float32Array.from(c);
}

/** One worker's rows of C = A·B, as hostGemm computes them (plain JavaScript, run with `eval`). */
const GEMM_ROWS_WORKER = `
const { workerData: w } = require("node:worker_threads");
const a = new Float32Array(w.a), b = new Float32Array(w.b), c = new Float32Array(w.c);
const row = new Float64Array(w.n);
for (let i = w.row0; i < w.row1; i++) {
  row.fill(0);
  for (let k = 0; k < w.k; k++) {
    const x = a[i * w.k + k];
    if (x === 0) continue;
    const bk = k * w.n;
    for (let j = 0; j < w.n; j++) row[j] += x * b[bk + j];
  }
  c.set(row, i * w.n);
}
`;

/**
 * hostGemm on every core of this host, rows split among worker threads
 * sharing the operands: the exact reference for large sizes (4096³ would
 * take minutes on one core).
 */
export async function hostGemmParallel(a: Float32Array, b: Float32Array, p: GemmProblem, workers = availableParallelism()): Promise<Float32Array> {
  const shared = (x: Float32Array) => {
    const s = new Float32Array(new SharedArrayBuffer(x.byteLength));
    s.set(x);
    return s.buffer;
  };
  const sa = shared(a);
  const sb = shared(b);
  const sc = new SharedArrayBuffer(p.m * p.n * 4);
  const per = Math.ceil(p.m / workers);
  await Promise.all(
    Array.from(
      { length: Math.min(workers, p.m) },
      (_, w) =>
        new Promise<void>((done, fail) => {
          const worker = new Worker(GEMM_ROWS_WORKER, {
            eval: true,
            workerData: { a: sa, b: sb, c: sc, n: p.n, k: p.k, row0: w * per, row1: Math.min(p.m, (w + 1) * per) },
          });
          worker.once("error", fail);
          worker.once("exit", (code) => (code === 0 ? done() : fail(new Error(`a GEMM reference worker exited with ${code}`))));
        }),
    ),
  );
  return new Float32Array(sc).slice();
}

/** Floating-point operations of one GEMM. */
export function gemmFlops(p: GemmProblem): number {
  return 2 * p.m * p.n * p.k;
}
