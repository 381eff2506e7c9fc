/**
 * Host-side packing between the plain layouts users hold (NCHW, OIHW,
 * row-major matrices) and the blocked layouts VTA kernels read and write
 * (§9.3 of docs/vta-isa.md; the tutorials do this in numpy):
 *
 * * data `(N, C, H, W)` → `(N/B, C/16, H, W, B, 16)`: reshape to
 *   `(N/B, B, C/16, 16, H, W)`, transpose `(0, 2, 4, 5, 1, 3)`;
 * * kernel `(O, I, KH, KW)` → `(O/16, I/16, KH, KW, 16, 16)` the same way;
 * * matrix `(R, K)` → `(R/r, K/k, r, k)`: reshape to `(R/r, r, K/k, k)`, transpose `(0, 2, 1, 3)`.
 */
import { FarmError } from "../../protos/index.ts";
import { DEFAULT_VTA_HARDWARE, type VtaHardware } from "../../vta/index.ts";

type Int8Like = Int8Array | Int32Array;

function checkLength(data: ArrayLike<number>, dims: readonly number[], what: string): void {
  const n = dims.reduce((a, b) => a * b, 1);
  if (data.length !== n) throw new FarmError("INVALID_ARGUMENT", `${what}: expected ${dims.join("×")} = ${n} elements, got ${data.length}`);
}

function checkBlock(extent: number, block: number, what: string): void {
  if (extent % block !== 0) throw new FarmError("INVALID_ARGUMENT", `${what} (${extent}) is not a multiple of ${block}`);
}

/** `(A, B, H, W)` with A blocked by `a` and B by `b` → `(A/a, B/b, H, W, a, b)`; `inverse` goes back. */
function pack4<T extends Int8Like>(src: T, [A, B, H, W]: readonly [number, number, number, number], a: number, b: number, inverse: boolean): T {
  const out = new (src.constructor as { new (n: number): T })(src.length);
  const Ab = A / a;
  const Bb = B / b;
  for (let ao = 0; ao < Ab; ao++) {
    for (let bo = 0; bo < Bb; bo++) {
      for (let h = 0; h < H; h++) {
        for (let w = 0; w < W; w++) {
          const packedBase = (((ao * Bb + bo) * H + h) * W + w) * a * b;
          for (let ai = 0; ai < a; ai++) {
            for (let bi = 0; bi < b; bi++) {
              const plain = (((ao * a + ai) * B + bo * b + bi) * H + h) * W + w;
              const packed = packedBase + ai * b + bi;
              if (inverse) out[plain] = src[packed]!;
              else out[packed] = src[plain]!;
            }
          }
        }
      }
    }
  }
  return out;
}

/** NCHW data → `(N/BATCH, C/BLOCK_IN, H, W, BATCH, BLOCK_IN)`. */
export function packNCHW<T extends Int8Like>(data: T, shape: readonly [number, number, number, number], hw: VtaHardware = DEFAULT_VTA_HARDWARE): T {
  checkLength(data, shape, "packNCHW");
  checkBlock(shape[0], hw.batch, "batch");
  checkBlock(shape[1], hw.blockIn, "channels");
  return pack4(data, shape, hw.batch, hw.blockIn, false);
}

/** `(N/BATCH, C/BLOCK_OUT, H, W, BATCH, BLOCK_OUT)` → NCHW; `shape` is the NCHW shape. */
export function unpackNCHW<T extends Int8Like>(packed: T, shape: readonly [number, number, number, number], hw: VtaHardware = DEFAULT_VTA_HARDWARE): T {
  checkLength(packed, shape, "unpackNCHW");
  checkBlock(shape[0], hw.batch, "batch");
  checkBlock(shape[1], hw.blockOut, "channels");
  return pack4(packed, shape, hw.batch, hw.blockOut, true);
}

/** OIHW kernel → `(O/BLOCK_OUT, I/BLOCK_IN, KH, KW, BLOCK_OUT, BLOCK_IN)`. */
export function packOIHW<T extends Int8Like>(kernel: T, shape: readonly [number, number, number, number], hw: VtaHardware = DEFAULT_VTA_HARDWARE): T {
  checkLength(kernel, shape, "packOIHW");
  checkBlock(shape[0], hw.blockOut, "output channels");
  checkBlock(shape[1], hw.blockIn, "input channels");
  return pack4(kernel, shape, hw.blockOut, hw.blockIn, false);
}

/** Row-major `(rows, cols)` → `(rows/rowBlock, cols/colBlock, rowBlock, colBlock)`. */
export function packMatrix<T extends Int8Like>(m: T, rows: number, cols: number, rowBlock: number, colBlock: number): T {
  checkLength(m, [rows, cols], "packMatrix");
  checkBlock(rows, rowBlock, "rows");
  checkBlock(cols, colBlock, "columns");
  return pack4(m, [rows, cols, 1, 1], rowBlock, colBlock, false);
}

/** The inverse of packMatrix. */
export function unpackMatrix<T extends Int8Like>(packed: T, rows: number, cols: number, rowBlock: number, colBlock: number): T {
  checkLength(packed, [rows, cols], "unpackMatrix");
  checkBlock(rows, rowBlock, "rows");
  checkBlock(cols, colBlock, "columns");
  return pack4(packed, [rows, cols, 1, 1], rowBlock, colBlock, true);
}

/** Matmul input A `(batch, in)` → `(batch/BATCH, in/BLOCK_IN, BATCH, BLOCK_IN)`. */
export function packMatmulInput<T extends Int8Like>(a: T, batch: number, inFeatures: number, hw: VtaHardware = DEFAULT_VTA_HARDWARE): T {
  return packMatrix(a, batch, inFeatures, hw.batch, hw.blockIn);
}

/** Matmul weights W `(out, in)` → `(out/BLOCK_OUT, in/BLOCK_IN, BLOCK_OUT, BLOCK_IN)`. */
export function packMatmulWeight<T extends Int8Like>(w: T, outFeatures: number, inFeatures: number, hw: VtaHardware = DEFAULT_VTA_HARDWARE): T {
  return packMatrix(w, outFeatures, inFeatures, hw.blockOut, hw.blockIn);
}

/** Matmul output C `(batch/BATCH, out/BLOCK_OUT, BATCH, BLOCK_OUT)` → `(batch, out)`. */
export function unpackMatmulOutput<T extends Int8Like>(c: T, batch: number, outFeatures: number, hw: VtaHardware = DEFAULT_VTA_HARDWARE): T {
  return unpackMatrix(c, batch, outFeatures, hw.batch, hw.blockOut);
}
