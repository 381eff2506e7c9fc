import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FarmError } from "../../protos/index.ts";
import { packMatmulInput, packMatmulWeight, packMatrix, packNCHW, packOIHW, unpackMatmulOutput, unpackMatrix, unpackNCHW } from "./layout.ts";
import { conv2dReference, elementwiseReference, matmulReference } from "./reference.ts";
import { conv2dOutputSize } from "./conv2d.ts";

const iota = (n: number) => Int8Array.from({ length: n }, (_, i) => (i % 251) - 125);

describe("VTA host packing", () => {
  it("packs NCHW as (N/B, C/16, H, W, B, 16) — the tutorial's reshape + transpose(0, 2, 4, 5, 1, 3)", () => {
    const [N, C, H, W] = [1, 32, 2, 3];
    const data = iota(N * C * H * W);
    const packed = packNCHW(data, [N, C, H, W]);
    // packed[n0][c0][h][w][n1][c1] = data[n0·B + n1][c0·16 + c1][h][w]
    for (const [c0, h, w, c1] of [
      [0, 0, 0, 0],
      [1, 1, 2, 5],
      [1, 0, 1, 15],
    ] as const) {
      const p = (((c0 * H + h) * W + w) * 1 + 0) * 16 + c1;
      assert.equal(packed[p], data[((c0 * 16 + c1) * H + h) * W + w]);
    }
    assert.deepEqual(unpackNCHW(packed, [N, C, H, W]), data);
  });

  it("packs OIHW kernels as (O/16, I/16, KH, KW, 16, 16) and matrices as (R/r, K/k, r, k)", () => {
    const [O, I, KH, KW] = [32, 16, 3, 2];
    const k = iota(O * I * KH * KW);
    const packed = packOIHW(k, [O, I, KH, KW]);
    const o = 17;
    const i = 9;
    const p = (((1 * 1 + 0) * KH + 2) * KW + 1) * 256 + (o - 16) * 16 + i;
    assert.equal(packed[p], k[((o * I + i) * KH + 2) * KW + 1]);
    const m = iota(32 * 48);
    assert.deepEqual(unpackMatrix(packMatrix(m, 32, 48, 16, 16), 32, 48, 16, 16), m);
    assert.equal(packMatmulInput(iota(3 * 16), 3, 16)[16], iota(48)[16]);
    const wt = iota(32 * 48);
    assert.deepEqual(packMatmulWeight(wt, 32, 48), packMatrix(wt, 32, 48, 16, 16));
    const c = iota(4 * 32);
    assert.deepEqual(unpackMatmulOutput(packMatrix(c, 4, 32, 1, 16), 4, 32), c);
  });

  it("refuses shapes that are not whole blocks", () => {
    assert.throws(
      () => packNCHW(iota(24), [1, 24, 1, 1]),
      (e: unknown) => e instanceof FarmError && e.code === "INVALID_ARGUMENT" && /channels \(24\) is not a multiple of 16/.test(e.message),
    );
    assert.throws(() => packOIHW(iota(10), [16, 16, 1, 1]), /expected 16×16×1×1 = 256 elements, got 10/);
  });
});

describe("VTA reference implementations", () => {
  it("conv2d: int32 accumulation, >> shift, clip, int8", () => {
    // One channel block; the kernel picks input channel 0 at the centre tap, scaled by 3.
    const w = { batch: 1, inChannels: 16, outChannels: 16, height: 3, width: 3, kernelH: 3, kernelW: 3, padH: 1, padW: 1, shift: 1, clip: [0, 40] as const };
    const data = new Int8Array(16 * 9);
    for (let i = 0; i < 9; i++) data[i] = i * 10 - 30; // channel 0: -30, -20, ..., 50
    const kernel = new Int8Array(16 * 16 * 9);
    kernel[4] = 3; // o = 0, i = 0, centre
    const out = conv2dReference(data, kernel, w);
    assert.deepEqual([...out.slice(0, 9)], [0, 0, 0, 0, 15, 30, 40, 40, 40]);
    assert.equal(out[9], 0);
    assert.deepEqual(conv2dOutputSize({ ...w, strideH: 2, padH: 0 }), { outHeight: 1, outWidth: 3 });
  });

  it("matmul: A · Wᵀ wraps to int8 without an epilogue", () => {
    const a = new Int8Array(16).fill(16);
    const wt = new Int8Array(16 * 16).fill(1);
    wt[16] = -128;
    const out = matmulReference(a, wt, { batch: 1, inFeatures: 16, outFeatures: 16 });
    assert.equal(out[0], 0); // 256 → int8 0
    assert.equal(out[1], ((16 * (15 - 128)) << 24) >> 24);
  });

  it("element-wise: binary and immediate steps in order", () => {
    const a = Int32Array.of(1000, -1000, 5, 300);
    const b = Int32Array.of(24, 24, -5, 0);
    const out = elementwiseReference(a, b, {
      length: 4,
      ops: [
        { op: "add", rhs: "b" },
        { op: "shr", imm: 3 },
        { op: "max", imm: -100 },
      ],
    });
    assert.deepEqual([...out], [128 - 256, -100, 0, 37]);
  });
});
