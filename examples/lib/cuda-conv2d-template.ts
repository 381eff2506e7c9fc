/**
 * A tunable CUDA conv2d (NCHW, 3×3, stride 1, padding 1, float32, batch 1) in
 * the shape of autotvm's `conv2d_nchw.cuda` direct template
 * (topi/cuda/conv2d_direct.py), written as CUDA C++ with the knobs baked in
 * as `#define`s, so each configuration is its own module.
 *
 * autotvm's knobs, and what they are here:
 *
 * | knob | autotvm | here |
 * |---|---|---|
 * | `tile_f`, `tile_y`, `tile_x` | 4-way splits of the output channels, rows and columns: [block, vthread, thread, inner] | the same: a block computes (vf·tf·if)×(vy·ty·iy)×(vx·tx·ix) outputs; thread (tf, ty, tx) computes vf·if × vy·iy × vx·ix of them, its virtual threads strided by the thread extent as TVM's `vthread` lays them out |
 * | `tile_rc`, `tile_ry`, `tile_rx` | 2-way splits of the reduction: [outer, inner] | the same: the outer loops stage `rc_inner` input channels (and `ry_inner`×`rx_inner` filter taps) of input and filter through shared memory (TVM's `AA`, `WW` at `rxo`) |
 * | `auto_unroll_max_step` | unroll inner loops while their extents' product stays within it | the same, on the staged reduction loops (rx, ry, rc inner, innermost first); the register tile's loops are always unrolled |
 * | `unroll_explicit` | unroll in TVM's IR (1) or leave a pragma (0) | in CUDA C++ both are `#pragma unroll`; 1 also pins the loops *not* chosen with `#pragma unroll 1`, 0 leaves them to nvcc's own heuristics |
 * | `split_k` | — (not in autotvm) | the input channels split across the `split_k` blocks of a Hopper thread-block cluster, which add their partial sums through distributed shared memory in a fixed order (deterministic, no workspace, no atomics): parallelism for small images, where batch 1 at 7×7 gives too few blocks. 1 is autotvm's template exactly |
 *
 * Like autotvm's, the kernel has no `__launch_bounds__`: a configuration
 * whose registers × threads do not fit a block compiles, and its launch
 * would fail — measure() tells that on the host from ptxas's report
 * (INVALID_CONFIG) and never uploads it.
 *
 * Pure code, no farm: the tuning example and its tests import it.
 */
import { compileCuda, type CudaCompiledModule, type LaunchDecl } from "kernelfarm";
import type { Config } from "./search.ts";

/** A 3×3, stride-1, padding-1 convolution of a batch of one: C×H×W input, K filters, K×H×W output. */
export interface ConvProblem {
  c: number;
  h: number;
  w: number;
  k: number;
}

/** The 3×3 stride-1 layers of ResNet-18 (seed 004's is the last: 7×7×512, TVM's CUDA conv2d tutorial). */
export const RESNET18_3X3_LAYERS: Readonly<Record<string, ConvProblem>> = {
  "56x56x64": { c: 64, h: 56, w: 56, k: 64 },
  "28x28x128": { c: 128, h: 28, w: 28, k: 128 },
  "14x14x256": { c: 256, h: 14, w: 14, k: 256 },
  "7x7x512": { c: 512, h: 7, w: 7, k: 512 },
};

export const CONV_FUNCTION = "conv2d";
export const CONV_PARAMS = ["float32* data", "float32* kernel", "float32* out"] as const;

export const R = 3;
export const PAD = 1;

/** Floating-point operations of one convolution (a multiply-add counts two). */
export function convFlops(p: ConvProblem): number {
  return 2 * p.k * p.h * p.w * p.c * R * R;
}

/** Every ordered way to write n as a product of `parts` factors: autotvm's `define_split` space. */
export function splits(n: number, parts: number): number[][] {
  if (parts === 1) return [[n]];
  const out: number[][] = [];
  for (let f = 1; f <= n; f++) if (n % f === 0) for (const rest of splits(n / f, parts - 1)) out.push([f, ...rest]);
  return out;
}

/** A split as a knob value: "2x1x8x4" (outermost first). */
export const splitKey = (s: readonly number[]) => s.join("x");
export const parseSplit = (k: string | number) => String(k).split("x").map(Number);

/** Hopper's portable cluster size: the most blocks `split_k` may join without opting in. */
export const MAX_CLUSTER = 8;

/** The knob space for problem `p`, as autotvm builds it for the same operator. */
export function directSpace(p: ConvProblem) {
  return {
    tile_f: splits(p.k, 4).map(splitKey),
    tile_y: splits(p.h, 4).map(splitKey),
    tile_x: splits(p.w, 4).map(splitKey),
    tile_rc: splits(p.c, 2).map(splitKey),
    tile_ry: splits(R, 2).map(splitKey),
    tile_rx: splits(R, 2).map(splitKey),
    auto_unroll_max_step: [0, 512, 1500],
    unroll_explicit: [0, 1],
    split_k: [1, 2, 4, 8],
  } as const;
}

export type DirectSpace = ReturnType<typeof directSpace>;
export type DirectConfig = Config<DirectSpace>;

/** A configuration's factors by name. */
export function directFactors(c: DirectConfig) {
  const [bf, vf, tf, fi] = parseSplit(c.tile_f) as [number, number, number, number];
  const [by, vy, ty, yi] = parseSplit(c.tile_y) as [number, number, number, number];
  const [bx, vx, tx, xi] = parseSplit(c.tile_x) as [number, number, number, number];
  const [rco, rci] = parseSplit(c.tile_rc) as [number, number];
  const [ryo, ryi] = parseSplit(c.tile_ry) as [number, number];
  const [rxo, rxi] = parseSplit(c.tile_rx) as [number, number];
  return { bf, vf, tf, fi, by, vy, ty, yi, bx, vx, tx, xi, rco, rci, ryo, ryi, rxo, rxi, split: Number(c.split_k) };
}

export const MAX_THREADS_PER_BLOCK = 1024;
export const MAX_STATIC_SHARED_BYTES = 48 * 1024;
export const MAX_BLOCK_Z = 64;
/**
 * The template's own limit on a thread's register tile: beyond it nvcc spends
 * tens of seconds unrolling a kernel that spills anyway. (autotvm has none;
 * its larger tiles fail its "invalid gpu kernel" check after building.)
 */
export const MAX_ACCUMULATORS = 128;

export function directThreads(c: DirectConfig): number {
  const f = directFactors(c);
  return f.tf * f.ty * f.tx;
}

/** Static shared memory of a block: the staged input and filter, or the output tile when a cluster adds partial sums (the same bytes, reused). */
export function directSharedBytes(c: DirectConfig): number {
  const f = directFactors(c);
  const staged = f.rci * (f.vy * f.ty * f.yi + f.ryi - 1) * (f.vx * f.tx * f.xi + f.rxi - 1) + f.rci * f.ryi * f.rxi * f.vf * f.tf * f.fi;
  const tile = f.split > 1 ? f.vf * f.tf * f.fi * f.vy * f.ty * f.yi * f.vx * f.tx * f.xi : 0;
  return Math.max(staged, tile) * 4;
}

/**
 * Why `c` cannot run (a rule of the template or of every CUDA GPU), or
 * undefined: decided before anything is compiled. What depends on the
 * compiled kernel (registers) is measure()'s INVALID_CONFIG, after ptxas.
 */
export function directConfigProblem(c: DirectConfig, p: ConvProblem, arch = "sm_90"): string | undefined {
  const f = directFactors(c);
  const threads = f.tf * f.ty * f.tx;
  if (threads > MAX_THREADS_PER_BLOCK) return `${threads} threads per block (at most ${MAX_THREADS_PER_BLOCK})`;
  // tile_f's threads are threadIdx.z, which no CUDA GPU lets past 64.
  if (f.tf > MAX_BLOCK_Z) return `tile_f's ${f.tf} threads are the block's z dimension (at most ${MAX_BLOCK_Z})`;
  const acc = f.vf * f.fi * f.vy * f.yi * f.vx * f.xi;
  if (acc > MAX_ACCUMULATORS) return `${acc} accumulators per thread (the template allows ${MAX_ACCUMULATORS})`;
  if (directSharedBytes(c) > MAX_STATIC_SHARED_BYTES) return `${directSharedBytes(c)} bytes of shared memory (at most ${MAX_STATIC_SHARED_BYTES})`;
  const cluster = clusterSplitProblem("split_k", f.split, arch);
  if (cluster) return cluster;
  if (f.rco % f.split !== 0) return `split_k ${f.split} does not divide the ${f.rco} outer steps of tile_rc ${c.tile_rc}`;
  if (f.bf * f.vf * f.tf * f.fi !== p.k || f.by * f.vy * f.ty * f.yi !== p.h || f.bx * f.vx * f.tx * f.xi !== p.w || f.rco * f.rci !== p.c)
    return "the splits do not cover the problem";
  return undefined;
}

/** Why a cluster split of `split` blocks (the knob `knob`) cannot run on `arch`, or undefined: both templates' rule. */
export function clusterSplitProblem(knob: string, split: number, arch: string): string | undefined {
  if (split <= 1) return undefined;
  if (Number(/^sm_(\d+)/.exec(arch)?.[1] ?? 0) < 90) return `${knob} ${split} needs thread-block clusters (sm_90 or later), not ${arch}`;
  if (split > MAX_CLUSTER) return `${knob} ${split} is more than the ${MAX_CLUSTER} blocks of a portable cluster`;
  return undefined;
}

/** What a kernel with a cluster split includes. */
export const CLUSTER_INCLUDE = "#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n";

/**
 * The end of a kernel with a cluster split (both templates): every block of
 * the cluster has left its partial output tile (OUT_TILE floats) in its
 * `smem`; block r adds up the r-th slice of it over the cluster's blocks, in
 * rank order, so the sum is the same at every run. `decode` turns the tile's
 * element `e` into output coordinates (and may `continue` past one outside the
 * output); `store` writes the sum `s`.
 */
export function clusterSum(decode: string, store: string): string {
  return `  cluster.sync();
  const int rank = cluster.block_rank();
  const int per = (OUT_TILE + SPLIT - 1) / SPLIT;
  for (int e = rank * per + tid; e < min(OUT_TILE, (rank + 1) * per); e += THREADS) {
    ${decode}
    float s = 0.0f;
#pragma unroll
    for (int r = 0; r < SPLIT; r++) s += cluster.map_shared_rank(smem, r)[e];
    ${store}
  }
  cluster.sync();  // no block leaves while another still reads its shared memory`;
}

/** Compiles a conv2d template's source into a module with one kernel, `conv2d`, launched at call time. */
export function compileConv(source: string, fileName: string, opts: CompileConvOptions = {}): Promise<CudaCompiledModule> {
  return compileCuda(source, {
    functions: { [CONV_FUNCTION]: CONV_PARAMS },
    ...(opts.arch ? { arch: opts.arch } : {}),
    ...(opts.cache !== undefined ? { cache: opts.cache } : {}),
    fileName,
  });
}

export function directLaunch(c: DirectConfig): LaunchDecl {
  const f = directFactors(c);
  return { grid: [f.bx, f.by, f.bf * f.split], block: [f.tx, f.ty, f.tf] };
}

/** `#pragma unroll` for a loop chosen by auto_unroll_max_step, `#pragma unroll 1` or nothing for one that is not. */
function unrollPragmas(c: DirectConfig, registerTile: number, extents: readonly number[]): string[] {
  const step = Number(c.auto_unroll_max_step);
  let product = registerTile;
  // Innermost first, as TVM's unroll pass goes: a loop is unrolled while everything inside it, and it, stays within the step.
  return extents.map((e) => {
    product *= e;
    return product <= step ? "#pragma unroll" : Number(c.unroll_explicit) === 1 ? "#pragma unroll 1" : "";
  });
}

/** The CUDA C++ source of configuration `c` for problem `p`: `extern "C" __global__ void conv2d(data, kernel, out)`. */
export function directSource(c: DirectConfig, p: ConvProblem): string {
  const f = directFactors(c);
  const tile = f.vf * f.fi * f.vy * f.yi * f.vx * f.xi;
  // The staged reduction loops, innermost first: rx, ry, rc.
  const [uRx, uRy, uRc] = unrollPragmas(c, tile, [f.rxi, f.ryi, f.rci]);
  const cluster = f.split > 1;
  return `// kernelfarm conv2d direct template: ${Object.entries(c)
    .map(([k, v]) => `${k}=${v}`)
    .join(" ")}
// problem: C=${p.c} H=${p.h} W=${p.w} K=${p.k}, 3x3, stride 1, pad 1, batch 1
${cluster ? CLUSTER_INCLUDE : ""}
#define C ${p.c}
#define H ${p.h}
#define W ${p.w}
#define K ${p.k}
#define VF ${f.vf}
#define TF ${f.tf}
#define IF ${f.fi}
#define VY ${f.vy}
#define TY ${f.ty}
#define IY ${f.yi}
#define VX ${f.vx}
#define TX ${f.tx}
#define IX ${f.xi}
#define RCI ${f.rci}
#define RYI ${f.ryi}
#define RXI ${f.rxi}
#define SPLIT ${f.split}
#define RCO_PER_BLOCK (C / RCI / SPLIT)
#define FB (VF * TF * IF)
#define YB (VY * TY * IY)
#define XB (VX * TX * IX)
#define AH (YB + RYI - 1)
#define AW (XB + RXI - 1)
#define THREADS (TF * TY * TX)
#define STAGED (RCI * AH * AW + RCI * RYI * RXI * FB)
#define OUT_TILE (FB * YB * XB)
#define SMEM (SPLIT > 1 && OUT_TILE > STAGED ? OUT_TILE : STAGED)

extern "C" __global__ void${cluster ? " __cluster_dims__(1, 1, SPLIT)" : ""}
${CONV_FUNCTION}(const float* __restrict__ data, const float* __restrict__ kernel, float* __restrict__ out) {
  __shared__ float smem[SMEM];
  float (*AA)[AH][AW] = reinterpret_cast<float (*)[AH][AW]>(smem);
  float (*WW)[RYI][RXI][FB] = reinterpret_cast<float (*)[RYI][RXI][FB]>(smem + RCI * AH * AW);
  const int tx = threadIdx.x, ty = threadIdx.y, tf = threadIdx.z;
  const int tid = (tf * TY + ty) * TX + tx;
  const int f0 = (blockIdx.z / SPLIT) * FB, y0 = blockIdx.y * YB, x0 = blockIdx.x * XB;
  const int part = blockIdx.z % SPLIT;

  float acc[VF][IF][VY][IY][VX][IX];
#pragma unroll
  for (int a = 0; a < VF * IF * VY * IY * VX * IX; a++) (&acc[0][0][0][0][0][0])[a] = 0.0f;

  for (int rco = 0; rco < RCO_PER_BLOCK; rco++) {
    const int c0 = (part * RCO_PER_BLOCK + rco) * RCI;
    for (int ryo = 0; ryo < 3 / RYI; ryo++) {
      for (int rxo = 0; rxo < 3 / RXI; rxo++) {
        __syncthreads();
        // The input window these taps read, zero outside the image (the padding).
        for (int t = tid; t < RCI * AH * AW; t += THREADS) {
          const int cc = t / (AH * AW), i = (t / AW) % AH, j = t % AW;
          const int gy = y0 + ryo * RYI - ${PAD} + i, gx = x0 + rxo * RXI - ${PAD} + j;
          AA[cc][i][j] = (gy >= 0 && gy < H && gx >= 0 && gx < W) ? data[((c0 + cc) * H + gy) * W + gx] : 0.0f;
        }
        // The block's filters for those channels and taps, read along the taps (contiguous in OIHW).
        for (int t = tid; t < FB * RCI * RYI * RXI; t += THREADS) {
          const int rx = t % RXI, ry = (t / RXI) % RYI, cc = (t / (RXI * RYI)) % RCI, ff = t / (RXI * RYI * RCI);
          WW[cc][ry][rx][ff] = kernel[(((f0 + ff) * C + c0 + cc) * 3 + ryo * RYI + ry) * 3 + rxo * RXI + rx];
        }
        __syncthreads();
${uRc ? `${uRc}\n` : ""}        for (int rci = 0; rci < RCI; rci++) {
${uRy ? `${uRy}\n` : ""}          for (int ryi = 0; ryi < RYI; ryi++) {
${uRx ? `${uRx}\n` : ""}            for (int rxi = 0; rxi < RXI; rxi++) {
              float w[VF][IF];
${tileLoops(["vf", "fi"], 14)} w[vf][fi] = WW[rci][ryi][rxi][(vf * TF + tf) * IF + fi];
${tileLoops(["vy", "yi", "vx", "xi"], 14)} {
                      const float a = AA[rci][(vy * TY + ty) * IY + yi + ryi][(vx * TX + tx) * IX + xi + rxi];
${tileLoops(["vf", "fi"], 22)} acc[vf][fi][vy][yi][vx][xi] = fmaf(w[vf][fi], a, acc[vf][fi][vy][yi][vx][xi]);
                    }
            }
          }
        }
      }
    }
  }
${cluster ? clusterEpilogue() : plainEpilogue()}
}
`;
}

/** The register tile's indices and their extents. */
const TILE_EXTENT = { vf: "VF", fi: "IF", vy: "VY", yi: "IY", vx: "VX", xi: "IX" } as const;

/** Unrolled loops over register-tile indices, outermost first, from column `indent`; the body follows the last. */
function tileLoops(indices: (keyof typeof TILE_EXTENT)[], indent: number): string {
  return indices.map((v, i) => `#pragma unroll\n${" ".repeat(indent + 2 * i)}for (int ${v} = 0; ${v} < ${TILE_EXTENT[v]}; ${v}++)`).join("\n");
}

/** Every element of a thread's register tile, with its place (lf, ly, lx) in the block's output tile. */
const TILE_LOOPS = `${tileLoops(["vf", "fi", "vy", "yi", "vx", "xi"], 2)} {
              const int lf = (vf * TF + tf) * IF + fi, ly = (vy * TY + ty) * IY + yi, lx = (vx * TX + tx) * IX + xi;`;

function plainEpilogue(): string {
  return `${TILE_LOOPS}
              out[((f0 + lf) * H + y0 + ly) * W + x0 + lx] = acc[vf][fi][vy][yi][vx][xi];
            }`;
}

/**
 * split_k > 1: each block of the cluster leaves its partial tile in its own
 * shared memory; then block r adds up the r-th slice of the tile over the
 * cluster's blocks, in rank order (so the sum is the same at every run).
 */
function clusterEpilogue(): string {
  return `  cg::cluster_group cluster = cg::this_cluster();
  __syncthreads();  // every thread is done reading the staged input before the tile overwrites it
${TILE_LOOPS}
              smem[(lf * YB + ly) * XB + lx] = acc[vf][fi][vy][yi][vx][xi];
            }
${clusterSum("const int lf = e / (YB * XB), ly = (e / XB) % YB, lx = e % XB;", "out[((f0 + lf) * H + y0 + ly) * W + x0 + lx] = s;")}`;
}

export interface CompileConvOptions {
  arch?: string;
  /** The compile cache directory, or false (default: compileCuda's). */
  cache?: string | false;
}

export function compileDirect(c: DirectConfig, p: ConvProblem, opts: CompileConvOptions = {}): Promise<CudaCompiledModule> {
  return compileConv(directSource(c, p), "conv2d_direct.cu", opts);
}

/** The convolution on the host, float64 accumulators: the exact answer for integer-valued operands. */
export function hostConv2d(data: Float32Array, kernel: Float32Array, p: ConvProblem): Float32Array {
  const { c: C, h: H, w: W, k: K } = p;
  const out = new Float64Array(K * H * W);
  for (let f = 0; f < K; f++) {
    const o = out.subarray(f * H * W, (f + 1) * H * W);
    for (let ch = 0; ch < C; ch++) {
      const plane = data.subarray(ch * H * W, (ch + 1) * H * W);
      for (let ry = 0; ry < R; ry++) {
        for (let rx = 0; rx < R; rx++) {
          const wv = kernel[((f * C + ch) * R + ry) * R + rx]!;
          if (wv === 0) continue;
          for (let y = 0; y < H; y++) {
            const iy = y + ry - PAD;
            if (iy < 0 || iy >= H) continue;
            const row = iy * W;
            const x0 = Math.max(0, PAD - rx);
            const x1 = Math.min(W, W + PAD - rx);
            for (let x = x0; x < x1; x++) o[y * W + x]! += wv * plane[row + x + rx - PAD]!;
          }
        }
      }
    }
  }
  return Float32Array.from(out);
}
