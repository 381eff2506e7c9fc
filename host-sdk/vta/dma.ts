/**
 * 2-D DMA patterns (TVM's `_get_2d_pattern` in InjectDMAIntrin, §8 of
 * docs/vta-isa.md): a region of whole VTA elements, given as dimensions from outer
 * to inner with their DRAM strides (in elements), folded into the
 * `(x_size, y_size, x_stride)` of one LOAD or STORE. Dimensions of extent 1
 * vanish; contiguous dimensions fold into x, dimensions that step evenly over
 * whole rows fold into y. The SRAM side of the copy is dense, rows of x_size.
 */
import { FarmError } from "../../protos/index.ts";

export interface DmaDim {
  extent: number;
  /** DRAM elements between consecutive indices of this dimension. */
  stride: number;
}

export interface Dma2d {
  xSize: number;
  ySize: number;
  xStride: number;
}

/** The 2-D pattern of a region; undefined when it has none (more than one stride between rows). */
export function fold2d(dims: readonly DmaDim[]): Dma2d | undefined {
  let x = 1;
  let y = 1;
  let yStride = 0;
  let inY = false;
  for (let i = dims.length - 1; i >= 0; i--) {
    const d = dims[i]!;
    if (d.extent === 1) continue;
    if (!inY && d.stride === x) {
      x *= d.extent;
    } else if (!inY) {
      inY = true;
      y = d.extent;
      yStride = d.stride;
    } else if (d.stride === yStride * y) {
      y *= d.extent;
    } else {
      return undefined;
    }
  }
  return { xSize: x, ySize: y, xStride: inY ? yStride : x };
}

/** fold2d, for regions the template guarantees to be 2-D; COMPILE_ERROR otherwise. */
export function dma2d(dims: readonly DmaDim[], what: string): Dma2d {
  const d = fold2d(dims);
  if (d) return d;
  throw new FarmError(
    "COMPILE_ERROR",
    `${what}: the region is not a 2-D pattern (dimensions ${dims.map((q) => `${q.extent}@${q.stride}`).join(", ")}); VTA DMA moves rows of contiguous elements at one stride`,
  );
}
