/**
 * A tunable CUDA SGEMM template (C = A·B, row-major float32), in the spirit of
 * autotvm's conv2d template for NVIDIA GPUs: a block computes a BM×BN tile of
 * C, staging BK-deep slices of A and B through shared memory; each thread
 * accumulates a TM×TN tile in registers. The knobs are baked into the
 * generated source as `#define`s (and one `#pragma unroll` count), so each
 * configuration is its own module — the farm compiles them in parallel and
 * caches them by content.
 *
 * Knobs:
 *
 * | knob | meaning |
 * |---|---|
 * | BM, BN | block tile of C |
 * | BK | depth of a shared-memory stage |
 * | TM, TN | thread tile of C (registers) |
 * | vec | global loads of 1, 2 or 4 floats (float2 / float4) |
 * | unroll | `#pragma unroll` count of the loop over a stage's depth (1: not unrolled) |
 * | layout | `blocked`: a thread's tile is TM×TN adjacent elements (shared reads as float4 where TM, TN allow); `strided`: its rows and columns are TY and TX apart (no shared-memory bank conflicts, coalesced stores) |
 *
 * Pure code, no farm: the tuning example and its test import it.
 */
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import { compileCuda, type CudaCompiledModule, type LaunchDecl, type MeasureArg, type RandomFill } from "kernelfarm";
import type { Config } from "./search.ts";

export const GEMM_SPACE = {
  BM: [16, 32, 64, 128, 256],
  BN: [16, 32, 64, 128, 256],
  BK: [4, 8, 16, 32],
  TM: [1, 2, 4, 8, 16],
  TN: [1, 2, 4, 8, 16],
  vec: [1, 2, 4],
  unroll: [1, 2, 4, 8],
  layout: ["blocked", "strided"],
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
export const MAX_ACCUMULATORS = 64;

export function gemmThreads(c: GemmConfig): number {
  return (c.BM / c.TM) * (c.BN / c.TN);
}

export function gemmSharedBytes(c: GemmConfig): number {
  return (c.BM * c.BK + c.BK * c.BN) * 4;
}

/**
 * Why `c` cannot run on `p` (it would not compile, not launch, or not cover
 * C exactly), or undefined when it can. Checked before anything is compiled.
 */
export function gemmConfigProblem(c: GemmConfig, p: GemmProblem): string | undefined {
  if (c.BM % c.TM !== 0 || c.BN % c.TN !== 0) return `the thread tile ${c.TM}×${c.TN} does not divide the block tile ${c.BM}×${c.BN}`;
  const threads = gemmThreads(c);
  if (threads < 32 || threads > MAX_THREADS_PER_BLOCK || threads % 32 !== 0) return `${threads} threads per block (need a multiple of 32, at most ${MAX_THREADS_PER_BLOCK})`;
  if (c.TM * c.TN > MAX_ACCUMULATORS) return `${c.TM * c.TN} accumulators per thread (at most ${MAX_ACCUMULATORS})`;
  if (c.BK % c.vec !== 0 || c.BN % c.vec !== 0) return `loads of ${c.vec} floats do not divide BK ${c.BK} and BN ${c.BN}`;
  if (gemmSharedBytes(c) > MAX_STATIC_SHARED_BYTES) return `${gemmSharedBytes(c)} bytes of shared memory (at most ${MAX_STATIC_SHARED_BYTES})`;
  if (p.m % c.BM !== 0 || p.n % c.BN !== 0 || p.k % c.BK !== 0) return `the block tile ${c.BM}×${c.BN}×${c.BK} does not divide the problem ${p.m}×${p.n}×${p.k}`;
  if (p.k % c.vec !== 0 || p.n % c.vec !== 0) return `rows of A and B are not aligned for loads of ${c.vec} floats`;
  return undefined;
}

export function gemmLaunch(c: GemmConfig, p: GemmProblem): LaunchDecl {
  return { grid: [p.n / c.BN, p.m / c.BM], block: gemmThreads(c) };
}

/** Reads `count` consecutive floats of a shared array into `dst`, as float4s when `count` allows. */
function sharedRead(dst: string, count: string, src: (offset: string) => string, vector: boolean): string {
  if (!vector) return `#pragma unroll\n      for (int i = 0; i < ${count}; i++) ${dst}[i] = ${src("i")};`;
  return [
    `#pragma unroll`,
    `      for (int i = 0; i < ${count}; i += 4) {`,
    `        const float4 v = *reinterpret_cast<const float4*>(&${src("i")});`,
    `        ${dst}[i] = v.x; ${dst}[i + 1] = v.y; ${dst}[i + 2] = v.z; ${dst}[i + 3] = v.w;`,
    `      }`,
  ].join("\n");
}

/** The CUDA C++ source of configuration `c`: one kernel, `extern "C" __global__ void gemm(A, B, C, M, N, K)`. */
export function gemmSource(c: GemmConfig): string {
  const strided = c.layout === "strided";
  const readA = strided
    ? `#pragma unroll\n      for (int i = 0; i < TM; i++) a[i] = As[k][ty + i * TY];`
    : sharedRead("a", "TM", (i) => `As[k][ty * TM + ${i}]`, c.TM % 4 === 0);
  const readB = strided
    ? `#pragma unroll\n      for (int j = 0; j < TN; j++) b[j] = Bs[k][tx + j * TX];`
    : sharedRead("b", "TN", (j) => `Bs[k][tx * TN + ${j}]`, c.TN % 4 === 0);
  const rowOf = strided ? "ty + i * TY" : "ty * TM + i";
  const colOf = strided ? "tx + j * TX" : "tx * TN + j";
  /** A stage's tile of A or B from global to shared memory, VEC floats per load, all threads taking turns. */
  const load = (what: "A" | "B") => {
    const [rows, cols, src] = what === "A" ? ["BM", "BK", "Ab + (size_t)r * K + k0 + c"] : ["BK", "BN", "Bb + (size_t)(k0 + r) * N + c"];
    // A's tile is stored transposed (As[k][m]), so that the inner loop reads it along m.
    const put = (e: number, v: string) => (what === "A" ? `As[c + ${e}][r] = ${v};` : `Bs[r][c + ${e}] = ${v};`);
    const fields = ["x", "y", "z", "w"].slice(0, c.vec);
    const body =
      c.vec === 1
        ? put(0, "*src")
        : what === "B"
          ? `*reinterpret_cast<float${c.vec}*>(&Bs[r][c]) = *reinterpret_cast<const float${c.vec}*>(src);`
          : [`const float${c.vec} v = *reinterpret_cast<const float${c.vec}*>(src);`, ...fields.map((f, e) => put(e, `v.${f}`))].join(" ");
    return [
      `    for (int t = tid; t < ${rows} * ${cols} / VEC; t += THREADS) {`,
      `      const int r = t / (${cols} / VEC), c = (t % (${cols} / VEC)) * VEC;`,
      `      const float* src = ${src};`,
      `      ${body}`,
      `    }`,
    ].join("\n");
  };
  return `// kernelfarm GEMM template: ${Object.entries(c).map(([k, v]) => `${k}=${v}`).join(" ")}
#define BM ${c.BM}
#define BN ${c.BN}
#define BK ${c.BK}
#define TM ${c.TM}
#define TN ${c.TN}
#define VEC ${c.vec}
#define TX (BN / TN)
#define TY (BM / TM)
#define THREADS (TX * TY)

extern "C" __global__ void __launch_bounds__(THREADS)
${GEMM_FUNCTION}(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
  __shared__ __align__(16) float As[BK][BM];
  __shared__ __align__(16) float Bs[BK][BN];
  const int tid = threadIdx.x;
  const int tx = tid % TX, ty = tid / TX;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const float* Ab = A + (size_t)row0 * K;
  const float* Bb = B + col0;
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; i++)
#pragma unroll
    for (int j = 0; j < TN; j++) acc[i][j] = 0.0f;

  for (int k0 = 0; k0 < K; k0 += BK) {
${load("A")}
${load("B")}
    __syncthreads();
#pragma unroll ${c.unroll}
    for (int k = 0; k < BK; k++) {
      float a[TM], b[TN];
      ${readA}
      ${readB}
#pragma unroll
      for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; i++)
#pragma unroll
    for (int j = 0; j < TN; j++) C[(size_t)(row0 + ${rowOf}) * N + col0 + ${colOf}] = acc[i][j];
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
    Array.from({ length: Math.min(workers, p.m) }, (_, w) =>
      new Promise<void>((done, fail) => {
        const worker = new Worker(GEMM_ROWS_WORKER, { eval: true, workerData: { a: sa, b: sb, c: sc, n: p.n, k: p.k, row0: w * per, row1: Math.min(p.m, (w + 1) * per) } });
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
