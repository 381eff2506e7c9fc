/**
 * Plain reference implementations of what the VTA kernels compute, on the
 * plain layouts (NCHW / OIHW / row-major), for checking board outputs:
 * int8 operands, int32 accumulation (wrapping), then the kernel's epilogue
 * (`>> shift`, clip) and the int8 truncation of the STORE.
 */
import { FarmError } from "../../protos/index.ts";
import { conv2dOutputSize, type VtaConv2dWorkload } from "./conv2d.ts";
import type { VtaAluStep, VtaElementwiseWorkload } from "./elementwise.ts";
import { applyEpilogue, type VtaEpilogue } from "./epilogue.ts";
import type { VtaMatmulWorkload } from "./matmul.ts";

/** conv2d on NCHW data and an OIHW kernel → NCHW int8 output. */
export function conv2dReference(data: Int8Array, kernel: Int8Array, w: VtaConv2dWorkload): Int8Array {
  const { batch: N, inChannels: C, outChannels: O, height: H, width: W, kernelH: KH, kernelW: KW } = w;
  const ph = w.padH ?? 0;
  const pw = w.padW ?? 0;
  const sh = w.strideH ?? 1;
  const sw = w.strideW ?? 1;
  const { outHeight: OH, outWidth: OW } = conv2dOutputSize(w);
  if (data.length !== N * C * H * W) throw new FarmError("INVALID_ARGUMENT", `conv2dReference: data has ${data.length} elements, expected ${N}×${C}×${H}×${W}`);
  if (kernel.length !== O * C * KH * KW)
    throw new FarmError("INVALID_ARGUMENT", `conv2dReference: kernel has ${kernel.length} elements, expected ${O}×${C}×${KH}×${KW}`);
  const out = new Int8Array(N * O * OH * OW);
  for (let n = 0; n < N; n++) {
    for (let o = 0; o < O; o++) {
      for (let y = 0; y < OH; y++) {
        for (let x = 0; x < OW; x++) {
          let acc = 0;
          for (let c = 0; c < C; c++) {
            for (let dy = 0; dy < KH; dy++) {
              const iy = y * sh + dy - ph;
              if (iy < 0 || iy >= H) continue;
              for (let dx = 0; dx < KW; dx++) {
                const ix = x * sw + dx - pw;
                if (ix < 0 || ix >= W) continue;
                acc = (acc + data[((n * C + c) * H + iy) * W + ix]! * kernel[((o * C + c) * KH + dy) * KW + dx]!) | 0;
              }
            }
          }
          out[((n * O + o) * OH + y) * OW + x] = applyEpilogue(acc, w);
        }
      }
    }
  }
  return out;
}

/** `A · Wᵀ` with A `(batch, in)` and W `(out, in)` → int8 `(batch, out)`. */
export function matmulReference(a: Int8Array, weight: Int8Array, w: VtaMatmulWorkload): Int8Array {
  const { batch: M, inFeatures: K, outFeatures: N } = w;
  if (a.length !== M * K || weight.length !== N * K)
    throw new FarmError("INVALID_ARGUMENT", `matmulReference: expected A ${M}×${K} and W ${N}×${K}, got ${a.length} and ${weight.length} elements`);
  const out = new Int8Array(M * N);
  for (let i = 0; i < M; i++) {
    for (let j = 0; j < N; j++) {
      let acc = 0;
      for (let k = 0; k < K; k++) acc = (acc + a[i * K + k]! * weight[j * K + k]!) | 0;
      out[i * N + j] = applyEpilogue(acc, w as VtaEpilogue);
    }
  }
  return out;
}

function aluStep(x: number, y: number, st: VtaAluStep): number {
  switch (st.op) {
    case "add":
      return (x + y) | 0;
    case "min":
      return Math.min(x, y);
    case "max":
      return Math.max(x, y);
    case "mul":
      return Math.imul(x, y);
    case "shr":
      return x >> y;
    case "shl":
      return x << y;
  }
}

/** The element-wise program on `a` (and `b`) → int8. */
export function elementwiseReference(a: Int32Array | Int8Array, b: Int32Array | Int8Array | undefined, w: VtaElementwiseWorkload): Int8Array {
  const out = new Int8Array(w.length);
  for (let i = 0; i < w.length; i++) {
    let v = a[i]! | 0;
    for (const st of w.ops) {
      const y = "rhs" in st ? (b ? b[i]! | 0 : 0) : st.imm;
      v = aluStep(v, y, st);
    }
    out[i] = (v << 24) >> 24;
  }
  return out;
}
