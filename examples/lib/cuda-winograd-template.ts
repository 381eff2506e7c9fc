/**
 * A tunable Winograd F(2×2, 3×3) conv2d for the same problems as the direct
 * template (examples/lib/cuda-conv2d-template.ts), fused into one kernel so
 * that it competes call for call with the direct kernels and with cuDNN:
 * the filters are transformed in the kernel too (U = G·g·Gᵀ), nothing is
 * precomputed on the host.
 *
 * Each 2×2 output tile reads a 4×4 input patch d, transformed to V = Bᵀ·d·B;
 * the 16 positions of the transformed tiles are 16 independent products
 * M[ξ] = Σ_c U[ξ][k][c]·V[ξ][c][p] (2.25× fewer multiplies than direct), and
 * the output tile is Aᵀ·M·A.
 *
 * A block computes `BK` output channels × `BP` tiles, staging `BC` input
 * channels of transformed input and filters through shared memory at a time;
 * a thread accumulates all 16 positions of `TK` channels × `TP` tiles in
 * registers, so the output transform needs no shared memory. `split_c`
 * splits the input channels across the blocks of a Hopper thread-block
 * cluster, which add their output tiles through distributed shared memory in
 * rank order (as the direct template's `split_k`).
 *
 * With integer operands in −4…4 every value on the way (V: integers, U:
 * quarters, their sums of products) is a dyadic rational far below 2²², so
 * float32 computes the exact answer and the candidates are checked with no
 * tolerance, like the direct ones.
 */
import type { CudaCompiledModule, LaunchDecl } from "kernelfarm";
import {
  CLUSTER_INCLUDE,
  CONV_FUNCTION,
  MAX_STATIC_SHARED_BYTES,
  clusterSplitProblem,
  clusterSum,
  compileConv,
  type CompileConvOptions,
  type ConvProblem,
} from "./cuda-conv2d-template.ts";
import type { Config } from "./search.ts";

export const WINOGRAD_SPACE = {
  BK: [8, 16, 32, 64],
  BP: [4, 8, 16, 32, 64],
  TK: [1, 2, 4],
  TP: [1, 2, 4],
  BC: [2, 4, 8, 16, 32],
  split_c: [1, 2, 4, 8],
  unroll: [0, 1],
} as const;

export type WinogradConfig = Config<typeof WINOGRAD_SPACE>;

/** 2×2 output tiles of an H×W output (the last row and column of tiles are cut when H or W is odd). */
export function winogradTiles(p: ConvProblem): { th: number; tw: number; tiles: number } {
  const th = Math.ceil(p.h / 2);
  const tw = Math.ceil(p.w / 2);
  return { th, tw, tiles: th * tw };
}

export function winogradThreads(c: WinogradConfig): number {
  return (c.BK / c.TK) * (c.BP / c.TP);
}

export function winogradSharedBytes(c: WinogradConfig): number {
  const staged = 16 * c.BC * (c.BP + c.BK);
  const tile = c.split_c > 1 ? c.BK * c.BP * 4 : 0;
  return Math.max(staged, tile) * 4;
}

/** Why `c` cannot run on `p`, or undefined: decided before anything is compiled. */
export function winogradConfigProblem(c: WinogradConfig, p: ConvProblem, arch = "sm_90"): string | undefined {
  if (c.BK % c.TK !== 0 || c.BP % c.TP !== 0) return `the thread tile ${c.TK}×${c.TP} does not divide the block tile ${c.BK}×${c.BP}`;
  const threads = winogradThreads(c);
  if (threads < 32 || threads > 1024) return `${threads} threads per block (between 32 and 1024)`;
  if (16 * c.TK * c.TP > 128) return `${16 * c.TK * c.TP} accumulators per thread (the template allows 128)`;
  if (winogradSharedBytes(c) > MAX_STATIC_SHARED_BYTES) return `${winogradSharedBytes(c)} bytes of shared memory (at most ${MAX_STATIC_SHARED_BYTES})`;
  if (p.k % c.BK !== 0) return `BK ${c.BK} does not divide the ${p.k} output channels`;
  if (p.c % (c.BC * c.split_c) !== 0) return `BC ${c.BC} × split_c ${c.split_c} does not divide the ${p.c} input channels`;
  const { tiles } = winogradTiles(p);
  if (c.BP >= 2 * tiles) return `BP ${c.BP} is more than twice the ${tiles} tiles: most of the block would idle`;
  return clusterSplitProblem("split_c", c.split_c, arch);
}

export function winogradLaunch(c: WinogradConfig, p: ConvProblem): LaunchDecl {
  return { grid: [Math.ceil(winogradTiles(p).tiles / c.BP), p.k / c.BK, c.split_c], block: winogradThreads(c) };
}

export function winogradSource(c: WinogradConfig, p: ConvProblem): string {
  const { tw, tiles } = winogradTiles(p);
  const cluster = c.split_c > 1;
  return `// kernelfarm conv2d Winograd F(2x2,3x3) template: ${Object.entries(c)
    .map(([k, v]) => `${k}=${v}`)
    .join(" ")}
// problem: C=${p.c} H=${p.h} W=${p.w} K=${p.k}, 3x3, stride 1, pad 1, batch 1
${cluster ? CLUSTER_INCLUDE : ""}
#define C ${p.c}
#define H ${p.h}
#define W ${p.w}
#define K ${p.k}
#define TW ${tw}
#define P ${tiles}
#define BK ${c.BK}
#define BP ${c.BP}
#define TK ${c.TK}
#define TP ${c.TP}
#define BC ${c.BC}
#define SPLIT ${c.split_c}
#define NK (BK / TK)
#define NP (BP / TP)
#define THREADS (NK * NP)
#define C_PER_BLOCK (C / SPLIT)
#define STAGED (16 * BC * (BP + BK))
#define OUT_TILE (BK * BP * 4)
#define SMEM (SPLIT > 1 && OUT_TILE > STAGED ? OUT_TILE : STAGED)

extern "C" __global__ void${cluster ? " __cluster_dims__(1, 1, SPLIT)" : ""}
${CONV_FUNCTION}(const float* __restrict__ data, const float* __restrict__ kernel, float* __restrict__ out) {
  __shared__ float smem[SMEM];
  float (*V)[BC][BP] = reinterpret_cast<float (*)[BC][BP]>(smem);
  float (*U)[BC][BK] = reinterpret_cast<float (*)[BC][BK]>(smem + 16 * BC * BP);
  const int tid = threadIdx.x;
  const int tk = tid / NP, tp = tid % NP;
  const int p0 = blockIdx.x * BP, k0 = blockIdx.y * BK;
  const int cBegin = blockIdx.z * C_PER_BLOCK;

  float acc[16][TK][TP];
#pragma unroll
  for (int x = 0; x < 16; x++)
#pragma unroll
    for (int i = 0; i < TK; i++)
#pragma unroll
      for (int j = 0; j < TP; j++) acc[x][i][j] = 0.0f;

  for (int c0 = cBegin; c0 < cBegin + C_PER_BLOCK; c0 += BC) {
    __syncthreads();
    // V = Bt d B for BC channels of BP tiles (zero beyond the image and beyond the last tile).
    for (int t = tid; t < BC * BP; t += THREADS) {
      const int cc = t / BP, pp = t % BP, tile = p0 + pp;
      float d[4][4];
      const int y0 = (tile / TW) * 2 - 1, x0 = (tile % TW) * 2 - 1;
#pragma unroll
      for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) {
          const int y = y0 + i, x = x0 + j;
          d[i][j] = (tile < P && y >= 0 && y < H && x >= 0 && x < W) ? data[((c0 + cc) * H + y) * W + x] : 0.0f;
        }
      float b[4][4];  // Bt d
#pragma unroll
      for (int j = 0; j < 4; j++) {
        b[0][j] = d[0][j] - d[2][j];
        b[1][j] = d[1][j] + d[2][j];
        b[2][j] = d[2][j] - d[1][j];
        b[3][j] = d[1][j] - d[3][j];
      }
#pragma unroll
      for (int i = 0; i < 4; i++) {  // (Bt d) B
        V[i * 4 + 0][cc][pp] = b[i][0] - b[i][2];
        V[i * 4 + 1][cc][pp] = b[i][1] + b[i][2];
        V[i * 4 + 2][cc][pp] = b[i][2] - b[i][1];
        V[i * 4 + 3][cc][pp] = b[i][1] - b[i][3];
      }
    }
    // U = G g Gt for BK filters of BC channels.
    for (int t = tid; t < BC * BK; t += THREADS) {
      const int kk = t / BC, cc = t % BC;
      const float* g = kernel + ((k0 + kk) * C + c0 + cc) * 9;
      float a[4][3];  // G g
#pragma unroll
      for (int j = 0; j < 3; j++) {
        a[0][j] = g[j];
        a[1][j] = 0.5f * (g[j] + g[3 + j] + g[6 + j]);
        a[2][j] = 0.5f * (g[j] - g[3 + j] + g[6 + j]);
        a[3][j] = g[6 + j];
      }
#pragma unroll
      for (int i = 0; i < 4; i++) {  // (G g) Gt
        U[i * 4 + 0][cc][kk] = a[i][0];
        U[i * 4 + 1][cc][kk] = 0.5f * (a[i][0] + a[i][1] + a[i][2]);
        U[i * 4 + 2][cc][kk] = 0.5f * (a[i][0] - a[i][1] + a[i][2]);
        U[i * 4 + 3][cc][kk] = a[i][2];
      }
    }
    __syncthreads();
${c.unroll ? "#pragma unroll" : "#pragma unroll 1"}
    for (int cc = 0; cc < BC; cc++) {
#pragma unroll
      for (int x = 0; x < 16; x++) {
        float u[TK], v[TP];
#pragma unroll
        for (int i = 0; i < TK; i++) u[i] = U[x][cc][tk + i * NK];
#pragma unroll
        for (int j = 0; j < TP; j++) v[j] = V[x][cc][tp + j * NP];
#pragma unroll
        for (int i = 0; i < TK; i++)
#pragma unroll
          for (int j = 0; j < TP; j++) acc[x][i][j] = fmaf(u[i], v[j], acc[x][i][j]);
      }
    }
  }

  // Y = At M A: the 2x2 output tile of each (channel, tile) the thread holds.
${cluster ? "  cg::cluster_group cluster = cg::this_cluster();\n  __syncthreads();  // every thread is done reading the staged tiles before the output overwrites them\n" : ""}#pragma unroll
  for (int i = 0; i < TK; i++)
#pragma unroll
    for (int j = 0; j < TP; j++) {
      float m[4][4], t[2][4];
#pragma unroll
      for (int x = 0; x < 16; x++) m[x / 4][x % 4] = acc[x][i][j];
#pragma unroll
      for (int q = 0; q < 4; q++) {
        t[0][q] = m[0][q] + m[1][q] + m[2][q];
        t[1][q] = m[1][q] - m[2][q] - m[3][q];
      }
      float y[2][2];
#pragma unroll
      for (int r = 0; r < 2; r++) {
        y[r][0] = t[r][0] + t[r][1] + t[r][2];
        y[r][1] = t[r][1] - t[r][2] - t[r][3];
      }
      const int kk = tk + i * NK, pp = tp + j * NP;
${
  cluster
    ? `#pragma unroll
      for (int q = 0; q < 4; q++) smem[(kk * BP + pp) * 4 + q] = y[q / 2][q % 2];
    }
${clusterSum(
  "const int kk = e / (BP * 4), pp = (e / 4) % BP, q = e % 4, tile = p0 + pp, oy = (tile / TW) * 2 + q / 2, ox = (tile % TW) * 2 + q % 2;\n    if (tile >= P || oy >= H || ox >= W) continue;",
  "out[((k0 + kk) * H + oy) * W + ox] = s;",
)}`
    : `      const int tile = p0 + pp;
      if (tile >= P) continue;
      const int oy = (tile / TW) * 2, ox = (tile % TW) * 2;
#pragma unroll
      for (int q = 0; q < 4; q++)
        if (oy + q / 2 < H && ox + q % 2 < W) out[((k0 + kk) * H + oy + q / 2) * W + ox + q % 2] = y[q / 2][q % 2];
    }`
}
}
`;
}

export function compileWinograd(c: WinogradConfig, p: ConvProblem, opts: CompileConvOptions = {}): Promise<CudaCompiledModule> {
  return compileConv(winogradSource(c, p), "conv2d_winograd.cu", opts);
}
