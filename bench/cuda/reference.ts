/**
 * Plain-TS references for the math of kernels.cu, for GPU tests that check
 * the kernels' results on small sizes. Sums are accumulated in float64 and
 * rounded once, so compare with a tolerance (see maxRelError).
 */

/** C = A·B, row-major: A [M,K], B [K,N], C [M,N] (sgemm_tiled). */
export function sgemmRef(A: Float32Array, B: Float32Array, M: number, N: number, K: number): Float32Array {
  checkLength("A", A, M * K);
  checkLength("B", B, K * N);
  const C = new Float32Array(M * N);
  const row = new Float64Array(N);
  for (let i = 0; i < M; i++) {
    row.fill(0);
    for (let k = 0; k < K; k++) {
      const a = A[i * K + k]!;
      const bOff = k * N;
      for (let j = 0; j < N; j++) row[j]! += a * B[bOff + j]!;
    }
    C.set(row, i * N);
  }
  return C;
}

/**
 * 3x3 convolution, batch 1, stride 1, pad 1 (conv2d_3x3_nchw):
 * input [C,H,W], weights [K,C,3,3], output [K,H,W].
 */
export function conv2dRef(input: Float32Array, weights: Float32Array, C: number, H: number, W: number, K: number): Float32Array {
  checkLength("input", input, C * H * W);
  checkLength("weights", weights, K * C * 9);
  const out = new Float32Array(K * H * W);
  for (let k = 0; k < K; k++) {
    for (let oh = 0; oh < H; oh++) {
      for (let ow = 0; ow < W; ow++) {
        let sum = 0;
        for (let c = 0; c < C; c++) {
          for (let r = 0; r < 3; r++) {
            const ih = oh + r - 1;
            if (ih < 0 || ih >= H) continue;
            for (let s = 0; s < 3; s++) {
              const iw = ow + s - 1;
              if (iw < 0 || iw >= W) continue;
              sum += input[(c * H + ih) * W + iw]! * weights[((k * C + c) * 3 + r) * 3 + s]!;
            }
          }
        }
        out[(k * H + oh) * W + ow] = sum;
      }
    }
  }
  return out;
}

/**
 * Largest |actual - expected| / max(|expected|, floor) over all elements;
 * `floor` keeps near-zero expected values from dominating. Infinity when the
 * lengths differ or an element is NaN.
 */
export function maxRelError(actual: ArrayLike<number>, expected: ArrayLike<number>, floor = 1e-3): number {
  if (actual.length !== expected.length) return Infinity;
  let worst = 0;
  for (let i = 0; i < actual.length; i++) {
    const e = expected[i]!;
    const err = Math.abs(actual[i]! - e) / Math.max(Math.abs(e), floor);
    if (!(err <= worst)) worst = Number.isNaN(err) ? Infinity : err;
  }
  return worst;
}

function checkLength(name: string, a: Float32Array, n: number): void {
  if (a.length !== n) throw new Error(`${name} has ${a.length} elements, expected ${n}`);
}
