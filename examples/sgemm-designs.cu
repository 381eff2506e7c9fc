// SGEMM designs side by side, natively (no farm): what decided the structure of
// examples/lib/cuda-gemm-template.ts (docs/tune-cuda-conv2d.md, "SGEMM against
// cuBLAS"). Two families at 4096^3, each at several tiles, checked exactly
// against a naive kernel (integer operands) and timed with CUDA events (median
// of 15 repeats of 5 launches):
//   regdb       register prefetch into a second shared buffer, one barrier per
//               slice (what the template's buffers=2 generates);
//   multistage  cp.async pipelines of STAGES slices, A transposed by 4-byte
//               copies, B by 16-byte copies, dynamic shared memory.
// On the GPU host:
//   nvcc -O3 -arch=sm_90a -std=c++17 examples/sgemm-designs.cu -o sgemm-designs
//   ./sgemm-designs [cuBLAS-us]     (cuBLAS's time from examples/cudnn-baseline.py adds a ratio column)
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1);} } while (0)

__device__ __forceinline__ void cp4(float* dst, const float* src) {
  unsigned d = __cvta_generic_to_shared(dst);
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" :: "r"(d), "l"(src));
}
__device__ __forceinline__ void cp16(float* dst, const float* src) {
  unsigned d = __cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(d), "l"(src));
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N)); }

// Family 1: register prefetch, double-buffered shared memory, warp tiles.
template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int APAD, int MINB>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, MINB)
regdb(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
  constexpr int WARPS_N = BN / WN, THREADS = (BM / WM) * (BN / WN) * 32;
  constexpr int WTX = WN / TN, WTY = WM / TM;
  static_assert(WTX * WTY == 32, "warp");
  constexpr int LA = BM * BK / 4 / THREADS, LB = BK * BN / 4 / THREADS;
  static_assert(LA * THREADS * 4 == BM * BK && LB * THREADS * 4 == BK * BN, "loads");
  __shared__ __align__(16) float As[2][BK][BM + APAD];
  __shared__ __align__(16) float Bs[2][BK][BN];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N, ty = lane / WTX, tx = lane % WTX;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const float* Ab = A + (size_t)row0 * K;
  const float* Bb = B + col0;
  float4 ra[LA], rb[LB];
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; i++)
#pragma unroll
    for (int j = 0; j < TN; j++) acc[i][j] = 0.f;
  auto gload = [&](int k0) {
#pragma unroll
    for (int i = 0; i < LA; i++) { int t = tid + i * THREADS, r = t / (BK / 4), c = (t % (BK / 4)) * 4; ra[i] = *reinterpret_cast<const float4*>(Ab + (size_t)r * K + k0 + c); }
#pragma unroll
    for (int i = 0; i < LB; i++) { int t = tid + i * THREADS, r = t / (BN / 4), c = (t % (BN / 4)) * 4; rb[i] = *reinterpret_cast<const float4*>(Bb + (size_t)(k0 + r) * N + c); }
  };
  auto sstore = [&](int s) {
#pragma unroll
    for (int i = 0; i < LA; i++) { int t = tid + i * THREADS, r = t / (BK / 4), c = (t % (BK / 4)) * 4; As[s][c][r] = ra[i].x; As[s][c + 1][r] = ra[i].y; As[s][c + 2][r] = ra[i].z; As[s][c + 3][r] = ra[i].w; }
#pragma unroll
    for (int i = 0; i < LB; i++) { int t = tid + i * THREADS, r = t / (BN / 4), c = (t % (BN / 4)) * 4; *reinterpret_cast<float4*>(&Bs[s][r][c]) = rb[i]; }
  };
  gload(0); sstore(0); __syncthreads();
  int s = 0;
  for (int k0 = 0; k0 < K; k0 += BK) {
    const bool more = k0 + BK < K;
    if (more) gload(k0 + BK);
#pragma unroll
    for (int k = 0; k < BK; k++) {
      float a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM / 4; i++) { float4 v = *reinterpret_cast<const float4*>(&As[s][k][wm * WM + i * WTY * 4 + ty * 4]); a[4*i] = v.x; a[4*i+1] = v.y; a[4*i+2] = v.z; a[4*i+3] = v.w; }
#pragma unroll
      for (int j = 0; j < TN / 4; j++) { float4 v = *reinterpret_cast<const float4*>(&Bs[s][k][wn * WN + j * WTX * 4 + tx * 4]); b[4*j] = v.x; b[4*j+1] = v.y; b[4*j+2] = v.z; b[4*j+3] = v.w; }
#pragma unroll
      for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    if (more) { sstore(s ^ 1); __syncthreads(); s ^= 1; }
  }
#pragma unroll
  for (int i = 0; i < TM / 4; i++)
#pragma unroll
    for (int ii = 0; ii < 4; ii++)
#pragma unroll
      for (int j = 0; j < TN / 4; j++) {
        const int r = row0 + wm * WM + i * WTY * 4 + ty * 4 + ii, c = col0 + wn * WN + j * WTX * 4 + tx * 4;
        *reinterpret_cast<float4*>(&C[(size_t)r * N + c]) = make_float4(acc[4*i+ii][4*j], acc[4*i+ii][4*j+1], acc[4*i+ii][4*j+2], acc[4*i+ii][4*j+3]);
      }
}

// Family 2: cp.async multistage pipeline (A transposed with 4-byte copies, B with 16-byte copies), dynamic shared memory.
template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int APAD, int STAGES, int MINB>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, MINB)
multistage(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
  constexpr int WARPS_N = BN / WN, THREADS = (BM / WM) * (BN / WN) * 32;
  constexpr int WTX = WN / TN, WTY = WM / TM;
  static_assert(WTX * WTY == 32, "warp");
  constexpr int LA = BM * BK / 4 / THREADS, LB = BK * BN / 4 / THREADS;
  static_assert(LA * THREADS * 4 == BM * BK && LB * THREADS * 4 == BK * BN, "loads");
  constexpr int AS = BK * (BM + APAD), BS = BK * BN;
  extern __shared__ __align__(16) float smem[];
  float* As = smem;                 // [STAGES][BK][BM + APAD]
  float* Bs = smem + STAGES * AS;   // [STAGES][BK][BN]
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N, ty = lane / WTX, tx = lane % WTX;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const float* Ab = A + (size_t)row0 * K;
  const float* Bb = B + col0;
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; i++)
#pragma unroll
    for (int j = 0; j < TN; j++) acc[i][j] = 0.f;
  auto load = [&](int stage, int k0) {
    float* as = As + stage * AS; float* bs = Bs + stage * BS;
#pragma unroll
    for (int i = 0; i < LA; i++) { int t = tid + i * THREADS, r = t / (BK / 4), c = (t % (BK / 4)) * 4; const float* g = Ab + (size_t)r * K + k0 + c;
#pragma unroll
      for (int e = 0; e < 4; e++) cp4(as + (c + e) * (BM + APAD) + r, g + e); }
#pragma unroll
    for (int i = 0; i < LB; i++) { int t = tid + i * THREADS, r = t / (BN / 4), c = (t % (BN / 4)) * 4; cp16(bs + r * BN + c, Bb + (size_t)(k0 + r) * N + c); }
  };
  const int tiles = K / BK;
#pragma unroll
  for (int s = 0; s < STAGES - 1; s++) { if (s < tiles) load(s, s * BK); cp_commit(); }
  for (int t = 0; t < tiles; t++) {
    cp_wait<STAGES - 2>();
    __syncthreads();
    { const int n = t + STAGES - 1; if (n < tiles) load(n % STAGES, n * BK); cp_commit(); }
    const float* as = As + (t % STAGES) * AS; const float* bs = Bs + (t % STAGES) * BS;
#pragma unroll
    for (int k = 0; k < BK; k++) {
      float a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM / 4; i++) { float4 v = *reinterpret_cast<const float4*>(as + k * (BM + APAD) + wm * WM + i * WTY * 4 + ty * 4); a[4*i] = v.x; a[4*i+1] = v.y; a[4*i+2] = v.z; a[4*i+3] = v.w; }
#pragma unroll
      for (int j = 0; j < TN / 4; j++) { float4 v = *reinterpret_cast<const float4*>(bs + k * BN + wn * WN + j * WTX * 4 + tx * 4); b[4*j] = v.x; b[4*j+1] = v.y; b[4*j+2] = v.z; b[4*j+3] = v.w; }
#pragma unroll
      for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
  }
#pragma unroll
  for (int i = 0; i < TM / 4; i++)
#pragma unroll
    for (int ii = 0; ii < 4; ii++)
#pragma unroll
      for (int j = 0; j < TN / 4; j++) {
        const int r = row0 + wm * WM + i * WTY * 4 + ty * 4 + ii, c = col0 + wn * WN + j * WTX * 4 + tx * 4;
        *reinterpret_cast<float4*>(&C[(size_t)r * N + c]) = make_float4(acc[4*i+ii][4*j], acc[4*i+ii][4*j+1], acc[4*i+ii][4*j+2], acc[4*i+ii][4*j+3]);
      }
}

__global__ void naive(const float* A, const float* B, float* C, int M, int N, int K) {
  int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
  float s = 0; for (int k = 0; k < K; k++) s = fmaf(A[(size_t)r * K + k], B[(size_t)k * N + c], s);
  C[(size_t)r * N + c] = s;
}

static int M = 4096, N = 4096, K = 4096;
static double cublasUs = 0;
static float *dA, *dB, *dC, *dR;

template <typename F>
void bench(const char* name, F kern, dim3 grid, int threads, int smem) {
  if (smem > 48 * 1024) CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  cudaFuncAttributes at; CK(cudaFuncGetAttributes(&at, kern));
  CK(cudaMemset(dC, 0, (size_t)M * N * 4));
  kern<<<grid, threads, smem>>>(dA, dB, dC, M, N, K);
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) { printf("%-60s launch failed: %s\n", name, cudaGetErrorString(e)); exit(1); }
  std::vector<float> c((size_t)M * N), r((size_t)M * N);
  CK(cudaMemcpy(c.data(), dC, c.size() * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(r.data(), dR, r.size() * 4, cudaMemcpyDeviceToHost));
  size_t bad = 0; for (size_t i = 0; i < c.size(); i++) bad += c[i] != r[i];
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  std::vector<float> ts;
  for (int rep = 0; rep < 15; rep++) {
    cudaEventRecord(a);
    for (int i = 0; i < 5; i++) kern<<<grid, threads, smem>>>(dA, dB, dC, M, N, K);
    cudaEventRecord(b); cudaEventSynchronize(b);
    float ms; cudaEventElapsedTime(&ms, a, b); ts.push_back(ms / 5);
  }
  std::sort(ts.begin(), ts.end());
  double us = ts[ts.size() / 2] * 1000;
  printf("%-60s regs %3d local %3d smem %6d  %8.1f us  %6.0f GFLOP/s", name, at.numRegs, (int)at.localSizeBytes, smem + (int)at.sharedSizeBytes, us, 2.0 * M * N * K / us / 1e3);
  if (cublasUs > 0) printf("  %.3fx cuBLAS", cublasUs / us);
  printf("  %s\n", bad ? "WRONG" : "exact");
}

#define RDB(BM, BN, BK, WM, WN, TM, TN, P, MB) bench("regdb " #BM "x" #BN "x" #BK " w" #WM "x" #WN " t" #TM "x" #TN " pad" #P " minb" #MB, regdb<BM, BN, BK, WM, WN, TM, TN, P, MB>, dim3(N / BN, M / BM), (BM / WM) * (BN / WN) * 32, 0)
#define MS(BM, BN, BK, WM, WN, TM, TN, P, S, MB) bench("multistage " #BM "x" #BN "x" #BK " w" #WM "x" #WN " t" #TM "x" #TN " pad" #P " s" #S " minb" #MB, multistage<BM, BN, BK, WM, WN, TM, TN, P, S, MB>, dim3(N / BN, M / BM), (BM / WM) * (BN / WN) * 32, S * BK * ((BM + P) + BN) * 4)

int main(int argc, char** argv) {
  if (argc > 1) cublasUs = atof(argv[1]);
  std::vector<float> a((size_t)M * K), b((size_t)K * N);
  srand(1); for (auto& x : a) x = (float)(rand() % 9 - 4); for (auto& x : b) x = (float)(rand() % 9 - 4);
  CK(cudaMalloc(&dA, a.size() * 4)); CK(cudaMalloc(&dB, b.size() * 4)); CK(cudaMalloc(&dC, (size_t)M * N * 4)); CK(cudaMalloc(&dR, (size_t)M * N * 4));
  CK(cudaMemcpy(dA, a.data(), a.size() * 4, cudaMemcpyHostToDevice)); CK(cudaMemcpy(dB, b.data(), b.size() * 4, cudaMemcpyHostToDevice));
  naive<<<dim3(N / 16, M / 16), dim3(16, 16)>>>(dA, dB, dR, M, N, K); CK(cudaDeviceSynchronize());
  RDB(128, 128, 8, 32, 64, 8, 8, 0, 1);
  RDB(128, 128, 8, 32, 64, 8, 8, 4, 1);
  RDB(128, 128, 8, 32, 64, 8, 8, 4, 2);
  RDB(128, 128, 8, 64, 32, 8, 8, 4, 2);
  RDB(128, 128, 16, 32, 64, 8, 8, 4, 1);
  RDB(128, 128, 16, 32, 64, 8, 8, 4, 2);
  RDB(128, 128, 16, 64, 32, 8, 8, 4, 2);
  RDB(128, 256, 8, 64, 64, 8, 16, 4, 1);
  RDB(256, 128, 8, 64, 64, 16, 8, 4, 1);
  RDB(128, 64, 16, 32, 32, 8, 4, 4, 2);
  RDB(64, 128, 16, 32, 32, 4, 8, 4, 2);
  RDB(128, 64, 16, 64, 32, 8, 8, 4, 2);
  MS(128, 128, 8, 32, 64, 8, 8, 4, 3, 1);
  MS(128, 128, 8, 32, 64, 8, 8, 4, 3, 2);
  MS(128, 128, 8, 32, 64, 8, 8, 4, 4, 2);
  MS(128, 128, 16, 32, 64, 8, 8, 4, 3, 2);
  MS(128, 128, 16, 64, 32, 8, 8, 4, 3, 2);
  MS(128, 128, 16, 32, 64, 8, 8, 4, 4, 2);
  MS(128, 128, 16, 32, 64, 8, 8, 4, 3, 1);
  MS(128, 128, 32, 32, 64, 8, 8, 4, 3, 1);
  MS(128, 256, 16, 64, 64, 8, 16, 4, 3, 1);
  MS(256, 128, 16, 64, 64, 16, 8, 4, 3, 1);
  MS(128, 64, 16, 32, 32, 8, 4, 4, 4, 2);
  MS(128, 64, 16, 64, 32, 8, 8, 4, 4, 2);
  MS(128, 64, 32, 64, 32, 8, 8, 4, 3, 2);
}
