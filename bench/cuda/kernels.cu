// Timing-fidelity kernels for the CUDA benchmark (bench/cuda.ts).
//
// The same compiled module is timed twice in one run: by the farm's CUDA board
// and by bench/cuda/native-timer.c; bench/cuda/workloads.ts holds the launch
// configurations and arguments both use. fp32 throughout, tuned for sm_90.
//
//   nvcc -cubin -arch=sm_90 -O3 kernels.cu
//   nvcc -fatbin -gencode arch=compute_90,code=[sm_90,compute_90] -O3 kernels.cu
//
// All buffers come from cuMemAlloc (256-byte aligned), which the float4
// accesses below rely on.

// ---------------------------------------------------------------------------
// copy_f32: out[i] = in[i]. Bandwidth-bound: 16-byte loads and stores, grid-
// stride loop. Any n is correct; a multiple of 4 keeps every access vector.
// Launch: block (256,1,1), grid (ceil(n/4/256), 1, 1): one float4 per thread, which
// on an H100 matches cuMemcpyDtoD (fewer blocks, looping, is 3-7 % slower).
extern "C" __global__ void copy_f32(const float* __restrict__ in, float* __restrict__ out, int n) {
  const int n4 = n >> 2;
  const int stride = gridDim.x * blockDim.x;
  const float4* __restrict__ in4 = reinterpret_cast<const float4*>(in);
  float4* __restrict__ out4 = reinterpret_cast<float4*>(out);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) out4[i] = in4[i];
  // Tail (n not a multiple of 4): at most 3 elements.
  const int t = (n4 << 2) + blockIdx.x * blockDim.x + threadIdx.x;
  if (t < n) out[t] = in[t];
}

// ---------------------------------------------------------------------------
// saxpy: y = a*x + y. Bandwidth-bound (8 bytes read, 4 written per element);
// same access pattern as copy_f32.
// Launch: block (256,1,1), grid (ceil(n/4/256), 1, 1).
extern "C" __global__ void saxpy(float a, const float* __restrict__ x, float* __restrict__ y, int n) {
  const int n4 = n >> 2;
  const int stride = gridDim.x * blockDim.x;
  const float4* __restrict__ x4 = reinterpret_cast<const float4*>(x);
  float4* __restrict__ y4 = reinterpret_cast<float4*>(y);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
    const float4 xv = x4[i];
    float4 yv = y4[i];
    yv.x = fmaf(a, xv.x, yv.x);
    yv.y = fmaf(a, xv.y, yv.y);
    yv.z = fmaf(a, xv.z, yv.z);
    yv.w = fmaf(a, xv.w, yv.w);
    y4[i] = yv;
  }
  const int t = (n4 << 2) + blockIdx.x * blockDim.x + threadIdx.x;
  if (t < n) y[t] = fmaf(a, x[t], y[t]);
}

// ---------------------------------------------------------------------------
// sgemm_tiled: C = A * B, row-major, A [M,K], B [K,N], C [M,N].
// M, N, K must be multiples of 64 (N and K multiples of 4 for the float4
// accesses; M and N of 64 because there is no edge handling).
// Launch: block (16,16,1), grid (N/64, M/64, 1), no dynamic shared memory
// (8.5 KiB static).
//
// Each block computes a 64x64 tile of C, stepping through K in slices of 16:
// the A slice (64x16) is stored transposed in shared memory, the B slice
// (16x64) as is, so each thread reads its 4 A values and 4 B values per k as
// two float4s and does 16 FMAs into a 4x4 register tile (rows 4*ty.., columns
// 4*tx..). The next slice is fetched from global memory into registers while
// the current one is being multiplied.
#define SG_BM 64
#define SG_BN 64
#define SG_BK 16
#define SG_APAD 4  // row padding of the transposed A tile: halves bank conflicts on the transposing store

extern "C" __global__ void __launch_bounds__(256) sgemm_tiled(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
  __shared__ __align__(16) float As[SG_BK][SG_BM + SG_APAD];
  __shared__ __align__(16) float Bs[SG_BK][SG_BN];
  (void)M;

  const int tx = threadIdx.x, ty = threadIdx.y;
  const int tid = ty * 16 + tx;
  const int rowBase = blockIdx.y * SG_BM;
  const int colBase = blockIdx.x * SG_BN;

  // Global -> shared mapping, one float4 of A and one of B per thread per slice.
  const int aRow = tid >> 2, aCol = (tid & 3) << 2;    // A tile: 64 rows x 4 float4
  const int bRow = tid >> 4, bCol = (tid & 15) << 2;   // B tile: 16 rows x 16 float4
  const float* aPtr = A + (size_t)(rowBase + aRow) * K + aCol;
  const float* bPtr = B + (size_t)bRow * N + colBase + bCol;
  const size_t bStep = (size_t)SG_BK * N;

  float acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; i++)
#pragma unroll
    for (int j = 0; j < 4; j++) acc[i][j] = 0.0f;

  float4 aReg = *reinterpret_cast<const float4*>(aPtr);
  float4 bReg = *reinterpret_cast<const float4*>(bPtr);

  for (int k0 = 0; k0 < K; k0 += SG_BK) {
    As[aCol + 0][aRow] = aReg.x;
    As[aCol + 1][aRow] = aReg.y;
    As[aCol + 2][aRow] = aReg.z;
    As[aCol + 3][aRow] = aReg.w;
    *reinterpret_cast<float4*>(&Bs[bRow][bCol]) = bReg;
    __syncthreads();

    if (k0 + SG_BK < K) {
      aPtr += SG_BK;
      bPtr += bStep;
      aReg = *reinterpret_cast<const float4*>(aPtr);
      bReg = *reinterpret_cast<const float4*>(bPtr);
    }

#pragma unroll
    for (int k = 0; k < SG_BK; k++) {
      const float4 a = *reinterpret_cast<const float4*>(&As[k][ty * 4]);
      const float4 b = *reinterpret_cast<const float4*>(&Bs[k][tx * 4]);
      const float av[4] = {a.x, a.y, a.z, a.w};
      const float bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
      for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < 4; i++) {
    float* cRow = C + (size_t)(rowBase + ty * 4 + i) * N + colBase + tx * 4;
    *reinterpret_cast<float4*>(cRow) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
  }
}

// ---------------------------------------------------------------------------
// conv2d_3x3_nchw: batch 1, stride 1, pad 1.
//   in [C,H,W], w [K,C,3,3], out [K,H,W]; any C, H, W, K with C*H*W and
//   K*C*9 below 2^31.
// Launch: block (32,16,1), grid (ceil(K/4), ceil(H/8)*ceil(W/8), 1), no
// dynamic shared memory (~36 KiB static). For the ResNet last layer
// (C=K=512, H=W=7): grid (128,1,1), 512 threads per block.
//
// A block computes 4 output channels over one 8x8 tile of output pixels.
// threadIdx.x picks a pair of vertically adjacent pixels of the tile (8
// columns x 4 row pairs); threadIdx.y one of 16 slices of the input channels:
// in each chunk of 32 input channels, slice y handles 2. A thread keeps its
// 2 pixels x 4 output channels in registers: per input channel it reads a
// 4x3 input window (12 floats) and 9 float4 weights (one per tap, the 4
// output channels) and does 72 FMAs. The 16 slices' partial sums are added
// through shared memory at the end. Per chunk, the zero-padded 10x10 input
// tile of 32 channels (rows 12 floats apart, which makes the window reads
// bank-conflict-free) and the matching weights (laid out [c][tap][4 output
// channels]) are staged in shared memory; the next chunk is fetched into
// registers while this one is used.
#define CV_KB 4                              // output channels per block
#define CV_TILE 8                            // output tile edge
#define CV_IN (CV_TILE + 2)                  // padded input tile edge
#define CV_RS 12                             // row stride of the input tile in shared memory
#define CV_CS (CV_IN * CV_RS)                // channel stride of the input tile in shared memory
#define CV_SLICES 16                         // blockDim.y
#define CV_CC 32                             // input channels per chunk
#define CV_CPS (CV_CC / CV_SLICES)           // input channels per slice per chunk
#define CV_THREADS (32 * CV_SLICES)
#define CV_IN_ELEMS (CV_CC * CV_IN * CV_IN)  // 3200
#define CV_W_ELEMS (CV_CC * 9 * CV_KB)       // 1152
#define CV_IN_PER_THREAD ((CV_IN_ELEMS + CV_THREADS - 1) / CV_THREADS)  // 7
#define CV_W_PER_THREAD ((CV_W_ELEMS + CV_THREADS - 1) / CV_THREADS)    // 3

extern "C" __global__ void __launch_bounds__(CV_THREADS) conv2d_3x3_nchw(const float* __restrict__ in, const float* __restrict__ w, float* __restrict__ out, int C, int H, int W, int K) {
  __shared__ float inS[CV_CC * CV_CS];
  __shared__ __align__(16) float wS[CV_W_ELEMS];
  __shared__ float red[CV_SLICES][CV_KB][CV_TILE * CV_TILE];

  const int slice = threadIdx.y;
  const int tid = slice * 32 + threadIdx.x;
  const int tx = threadIdx.x % CV_TILE, ty = (threadIdx.x / CV_TILE) * 2;  // pixels (ty, tx) and (ty+1, tx) of the tile
  const int k0 = blockIdx.x * CV_KB;
  const int tilesW = (W + CV_TILE - 1) / CV_TILE;
  const int oh0 = (blockIdx.y / tilesW) * CV_TILE;
  const int ow0 = (blockIdx.y % tilesW) * CV_TILE;
  const int HW = H * W;

  // Each thread fetches the same elements of every chunk: precompute their
  // offsets for chunk 0 (-1: outside the image, or past K) and shared-memory
  // slots, so a fetch is an add, a compare and a load.
  int inOff[CV_IN_PER_THREAD], inSlot[CV_IN_PER_THREAD];
  int wOff[CV_W_PER_THREAD];
#pragma unroll
  for (int j = 0; j < CV_IN_PER_THREAD; j++) {
    const int i = tid + j * CV_THREADS;
    const int cc = i / (CV_IN * CV_IN), r = i % (CV_IN * CV_IN);
    const int ih = oh0 + r / CV_IN - 1, iw = ow0 + r % CV_IN - 1;
    inOff[j] = (i < CV_IN_ELEMS && ih >= 0 && ih < H && iw >= 0 && iw < W) ? cc * HW + ih * W + iw : -1;
    inSlot[j] = cc * CV_CS + (r / CV_IN) * CV_RS + r % CV_IN;
  }
#pragma unroll
  for (int j = 0; j < CV_W_PER_THREAD; j++) {
    const int i = tid + j * CV_THREADS;
    const int kk = i / (CV_CC * 9), r = i % (CV_CC * 9);  // r = cc*9 + tap: contiguous in w for a fixed k
    wOff[j] = (i < CV_W_ELEMS && k0 + kk < K) ? (k0 + kk) * C * 9 + r : -1;
  }

  float inReg[CV_IN_PER_THREAD];
  float wReg[CV_W_PER_THREAD];
  // Fetch chunk c0 into registers, zeros outside the image and past C and K.
  auto fetch = [&](int c0) {
#pragma unroll
    for (int j = 0; j < CV_IN_PER_THREAD; j++) {
      const int cc = (tid + j * CV_THREADS) / (CV_IN * CV_IN);
      inReg[j] = (inOff[j] >= 0 && c0 + cc < C) ? in[inOff[j] + c0 * HW] : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < CV_W_PER_THREAD; j++) {
      const int cc = (tid + j * CV_THREADS) % (CV_CC * 9) / 9;
      wReg[j] = (wOff[j] >= 0 && c0 + cc < C) ? w[wOff[j] + c0 * 9] : 0.0f;
    }
  };

  float acc0[CV_KB] = {0.0f, 0.0f, 0.0f, 0.0f};  // pixel (ty, tx)
  float acc1[CV_KB] = {0.0f, 0.0f, 0.0f, 0.0f};  // pixel (ty+1, tx)
  fetch(0);
  for (int c0 = 0; c0 < C; c0 += CV_CC) {
#pragma unroll
    for (int j = 0; j < CV_IN_PER_THREAD; j++)
      if (tid + j * CV_THREADS < CV_IN_ELEMS) inS[inSlot[j]] = inReg[j];
#pragma unroll
    for (int j = 0; j < CV_W_PER_THREAD; j++) {
      const int i = tid + j * CV_THREADS;
      if (i < CV_W_ELEMS) wS[(i % (CV_CC * 9)) * CV_KB + i / (CV_CC * 9)] = wReg[j];
    }
    __syncthreads();
    if (c0 + CV_CC < C) fetch(c0 + CV_CC);

#pragma unroll
    for (int s = 0; s < CV_CPS; s++) {
      const int cc = slice * CV_CPS + s;
      const float* inC = &inS[cc * CV_CS + ty * CV_RS + tx];
      const float4* wC = reinterpret_cast<const float4*>(&wS[cc * 9 * CV_KB]);
      float v[4][3];
#pragma unroll
      for (int r = 0; r < 4; r++)
#pragma unroll
        for (int q = 0; q < 3; q++) v[r][q] = inC[r * CV_RS + q];
#pragma unroll
      for (int r = 0; r < 3; r++)
#pragma unroll
        for (int q = 0; q < 3; q++) {
          const float4 wv = wC[r * 3 + q];
          acc0[0] = fmaf(v[r][q], wv.x, acc0[0]);
          acc0[1] = fmaf(v[r][q], wv.y, acc0[1]);
          acc0[2] = fmaf(v[r][q], wv.z, acc0[2]);
          acc0[3] = fmaf(v[r][q], wv.w, acc0[3]);
          acc1[0] = fmaf(v[r + 1][q], wv.x, acc1[0]);
          acc1[1] = fmaf(v[r + 1][q], wv.y, acc1[1]);
          acc1[2] = fmaf(v[r + 1][q], wv.z, acc1[2]);
          acc1[3] = fmaf(v[r + 1][q], wv.w, acc1[3]);
        }
    }
    __syncthreads();
  }

#pragma unroll
  for (int kk = 0; kk < CV_KB; kk++) {
    red[slice][kk][ty * CV_TILE + tx] = acc0[kk];
    red[slice][kk][(ty + 1) * CV_TILE + tx] = acc1[kk];
  }
  __syncthreads();
  // 256 outputs (4 channels x 64 pixels), one per thread of the first half.
  if (tid < CV_KB * CV_TILE * CV_TILE) {
    const int kk = tid / (CV_TILE * CV_TILE), p = tid % (CV_TILE * CV_TILE);
    float sum = 0.0f;
#pragma unroll
    for (int s = 0; s < CV_SLICES; s++) sum += red[s][kk][p];
    const int k = k0 + kk, oh = oh0 + p / CV_TILE, ow = ow0 + p % CV_TILE;
    if (k < K && oh < H && ow < W) out[k * HW + oh * W + ow] = sum;
  }
}
