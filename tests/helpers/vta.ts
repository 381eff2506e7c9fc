/**
 * Test data for VTA kernels: random inputs in the plain layouts, packed for
 * the board, and what the plain reference implementation says the output
 * must be — the same case whether it runs in-process or through a farm.
 */
import {
  conv2dOutputSize,
  conv2dReference,
  matmulReference,
  packMatmulInput,
  packMatmulWeight,
  packNCHW,
  packOIHW,
  unpackMatmulOutput,
  unpackNCHW,
  type VtaConv2dWorkload,
  type VtaMatmulWorkload,
} from "../../host-sdk/index.ts";

/** Deterministic int8 data in [lo, hi]: a small LCG, so a failure reproduces. */
export function randomInt8(n: number, seed: number, lo = -128, hi = 127): Int8Array {
  let x = seed >>> 0 || 1;
  const out = new Int8Array(n);
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    out[i] = lo + ((x >>> 8) % (hi - lo + 1));
  }
  return out;
}

/** Where two outputs first differ, or undefined when they are equal. */
export function firstMismatch(got: Int8Array, want: Int8Array): string | undefined {
  if (got.length !== want.length) return `lengths ${got.length} vs ${want.length}`;
  for (let i = 0; i < got.length; i++) if (got[i] !== want[i]) return `element ${i}: ${got[i]} vs reference ${want[i]}`;
  return undefined;
}

/** One run of a kernel with inputs `(in0, in1) → out`: packed inputs, the output's size, and the expected output. */
export interface VtaCase {
  /** Packed inputs, in parameter order (the output parameter comes after them). */
  inputs: [Int8Array, Int8Array];
  /** Elements of the (packed) output. */
  outLength: number;
  /** The plain-layout output from the packed one the board wrote. */
  unpack(packed: Int8Array): Int8Array;
  /** The reference output, plain layout. */
  want: Int8Array;
}

/** conv2d: NCHW data and OIHW kernel from seeds `seed` and `seed + 1`. */
export function conv2dCase(w: VtaConv2dWorkload, seed: number): VtaCase {
  const { outHeight: OH, outWidth: OW } = conv2dOutputSize(w);
  const data = randomInt8(w.batch * w.inChannels * w.height * w.width, seed);
  const kernel = randomInt8(w.outChannels * w.inChannels * w.kernelH * w.kernelW, seed + 1);
  const outShape = [w.batch, w.outChannels, OH, OW] as const;
  return {
    inputs: [packNCHW(data, [w.batch, w.inChannels, w.height, w.width]), packOIHW(kernel, [w.outChannels, w.inChannels, w.kernelH, w.kernelW])],
    outLength: w.batch * w.outChannels * OH * OW,
    unpack: (packed) => unpackNCHW(packed, outShape),
    want: conv2dReference(data, kernel, w),
  };
}

/** matmul: A (batch × in) and W (out × in) from seeds `seed` and `seed + 1`. */
export function matmulCase(w: VtaMatmulWorkload, seed: number): VtaCase {
  const a = randomInt8(w.batch * w.inFeatures, seed);
  const weight = randomInt8(w.outFeatures * w.inFeatures, seed + 1);
  return {
    inputs: [packMatmulInput(a, w.batch, w.inFeatures), packMatmulWeight(weight, w.outFeatures, w.inFeatures)],
    outLength: w.batch * w.outFeatures,
    unpack: (packed) => unpackMatmulOutput(packed, w.batch, w.outFeatures),
    want: matmulReference(a, weight, w),
  };
}
