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

export function dma2d(dims: readonly DmaDim[], what: string): Dma2d {
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
      throw new FarmError(
        "COMPILE_ERROR",
        `${what}: the region is not a 2-D pattern (dimensions ${dims.map((q) => `${q.extent}@${q.stride}`).join(", ")}); VTA DMA moves rows of contiguous elements at one stride`,
      );
    }
  }
  return { xSize: x, ySize: y, xStride: inY ? yStride : x };
}
