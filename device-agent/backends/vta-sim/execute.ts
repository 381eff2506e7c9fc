/**
 * What each VTA instruction does to the SRAMs and DRAM (§4 of
 * docs/vta-isa.md, the functional simulator's semantics), and what it adds to the
 * statistics (stats.ts). The scheduler (simulator.ts) decides when; this file
 * decides what, and the compute core (core.ts) runs the loop nests.
 *
 * * LOAD: a 2D strided copy from DRAM into SRAM, `y_pad_0` zero rows, then per
 *   row `x_pad_0` zero elements, `x_size` copied elements, `x_pad_1` zeros,
 *   then `y_pad_1` zero rows. ACC_8BIT sign-extends int8 into int32. A LOAD
 *   UOP also decodes the micro-ops it wrote.
 * * STORE: ACC element `sram_base + y·x_size + x` → OUT DRAM element
 *   `dram_base + y·x_stride + x`, each int32 lane truncated to its low 8 bits.
 * * GEMM (with reset_reg: zeroing) and ALU: the micro-op loop nest, once every
 *   index it forms is checked to lie inside its buffer.
 */
import { FarmError } from "../../../protos/index.ts";
import type { VtaHardware } from "../../../vta/index.ts";
import type { Core } from "./core.ts";
import type { DramBuffer } from "./dram.ts";
import { KIND, type DecodedInsn } from "../vta-board/decode.ts";
import type { VtaCounters } from "../vta-board/stats.ts";

export class Executor {
  private readonly inpLanes: number;
  private readonly wgtLanes: number;
  private readonly accLanes: number;

  constructor(
    private readonly hw: VtaHardware,
    private readonly core: Core,
    private readonly counters: VtaCounters,
  ) {
    this.inpLanes = hw.batch * hw.blockIn;
    this.wgtLanes = hw.blockOut * hw.blockIn;
    this.accLanes = hw.batch * hw.blockOut;
  }

  /**
   * Executes `d`. For a LOAD or STORE that moves data, `buf` is its DRAM
   * buffer and `byteBase` the byte offset of DRAM element `dram_base` in it
   * (bounds already checked by the caller).
   */
  exec(d: DecodedInsn, buf: DramBuffer | undefined, byteBase: number, where: string): void {
    const c = this.counters;
    const s = this.core.srams;
    const moved = d.xSize * d.ySize;
    switch (d.kind) {
      case KIND.NOP:
      case KIND.FINISH:
        return;
      case KIND.LOAD_INP:
        try {
          this.load2d(d, s.inp, this.inpLanes, buf?.i8, byteBase);
        } finally {
          // Even after a partial write the engine's copy must match what INP holds.
          this.core.inpWritten(d.sramBase, sramElements(d));
        }
        c.inp_load_nbytes += moved * this.hw.inpElemBytes;
        return;
      case KIND.LOAD_WGT:
        try {
          this.load2d(d, s.wgt, this.wgtLanes, buf?.i8, byteBase);
        } finally {
          this.core.wgtWritten(d.sramBase, sramElements(d));
        }
        c.wgt_load_nbytes += moved * this.hw.wgtElemBytes;
        return;
      case KIND.LOAD_ACC:
        this.load2d(d, s.acc, this.accLanes, buf?.i32, byteBase / 4);
        c.acc_load_nbytes += moved * this.hw.accElemBytes;
        return;
      case KIND.LOAD_ACC8:
        // Int32Array.set from an Int8Array sign-extends each lane.
        this.load2d(d, s.acc, this.accLanes, buf?.i8, byteBase);
        c.acc_load_nbytes += moved * this.hw.accElemBytes;
        return;
      case KIND.LOAD_UOP:
        this.load2d(d, s.uop, 1, buf?.u32, byteBase / 4);
        s.decodeUops(d.sramBase, sramElements(d));
        c.uop_load_nbytes += moved * this.hw.uopElemBytes;
        return;
      case KIND.STORE:
        this.store2d(d, buf!, byteBase);
        c.out_store_nbytes += moved * this.hw.outElemBytes;
        return;
      case KIND.GEMM:
        this.checkUops(d, where, true);
        this.core.gemm(d.uopBgn, d.uopEnd, d.iterOut, d.iterIn, d.dstFactorOut, d.dstFactorIn, d.srcFactorOut, d.srcFactorIn, d.wgtFactorOut, d.wgtFactorIn);
        c.gemm_counter += d.iterOut * d.iterIn * (d.uopEnd - d.uopBgn);
        return;
      case KIND.GEMM_RESET:
        this.checkUops(d, where, false);
        this.core.reset(d.uopBgn, d.uopEnd, d.iterOut, d.iterIn, d.dstFactorOut, d.dstFactorIn);
        return;
      case KIND.ALU:
        this.checkUops(d, where, false);
        this.core.alu(d.aluOpcode, d.useImm, d.imm, d.uopBgn, d.uopEnd, d.iterOut, d.iterIn, d.dstFactorOut, d.dstFactorIn, d.srcFactorOut, d.srcFactorIn);
        c.alu_counter += d.iterOut * d.iterIn * (d.uopEnd - d.uopBgn);
        return;
    }
  }

  /** Copies rows of `xSize` elements (`lanes` lanes each) from `src` (lane offset `srcBase`) with zero padding. */
  private load2d(
    d: DecodedInsn,
    dst: Int8Array | Int32Array | Uint32Array,
    lanes: number,
    src: Int8Array | Int32Array | Uint32Array | undefined,
    srcBase: number,
  ): void {
    const width = d.xPad0 + d.xSize + d.xPad1;
    let at = d.sramBase * lanes;
    if (d.yPad0 > 0) {
      dst.fill(0, at, at + d.yPad0 * width * lanes);
      at += d.yPad0 * width * lanes;
    }
    const rowLanes = d.xSize * lanes;
    const strideLanes = d.xStride * lanes;
    for (let y = 0; y < d.ySize; y++) {
      if (d.xPad0 > 0) dst.fill(0, at, at + d.xPad0 * lanes);
      at += d.xPad0 * lanes;
      const from = srcBase + y * strideLanes;
      dst.set(src!.subarray(from, from + rowLanes), at);
      at += rowLanes;
      if (d.xPad1 > 0) dst.fill(0, at, at + d.xPad1 * lanes);
      at += d.xPad1 * lanes;
    }
    if (d.yPad1 > 0) dst.fill(0, at, at + d.yPad1 * width * lanes);
  }

  private store2d(d: DecodedInsn, buf: DramBuffer, byteBase: number): void {
    const acc = this.core.srams.acc;
    const lanes = this.accLanes;
    const out = buf.i8;
    const rowLanes = d.xSize * lanes;
    // OUT elements are batch × blockOut int8: one byte per lane.
    const strideBytes = d.xStride * this.hw.outElemBytes;
    for (let y = 0; y < d.ySize; y++) {
      const from = (d.sramBase + y * d.xSize) * lanes;
      const to = byteBase + y * strideBytes;
      // An Int8Array keeps each int32's low 8 bits (two's complement): the hardware's truncation.
      for (let k = 0; k < rowLanes; k++) out[to + k] = acc[from + k]!;
    }
  }

  /** Every index the loop nest forms must lie inside its buffer. */
  private checkUops(d: DecodedInsn, where: string, gemmOperands: boolean): void {
    if (d.iterOut === 0 || d.iterIn === 0) return;
    const s = this.core.srams;
    const hw = this.hw;
    const srcDepth = d.kind === KIND.ALU ? hw.accDepth : hw.inpDepth;
    const checkSrc = gemmOperands || (d.kind === KIND.ALU && d.useImm === 0);
    const dstSpan = (d.iterOut - 1) * d.dstFactorOut + (d.iterIn - 1) * d.dstFactorIn;
    const srcSpan = (d.iterOut - 1) * d.srcFactorOut + (d.iterIn - 1) * d.srcFactorIn;
    const wgtSpan = (d.iterOut - 1) * d.wgtFactorOut + (d.iterIn - 1) * d.wgtFactorIn;
    for (let u = d.uopBgn; u < d.uopEnd; u++) {
      const dst = s.uopDst[u]! + dstSpan;
      if (dst >= hw.accDepth) throw this.rangeError(d, where, u, "ACC", s.uopDst[u]!, dst, hw.accDepth, "dst");
      if (checkSrc) {
        const src = s.uopSrc[u]! + srcSpan;
        if (src >= srcDepth) throw this.rangeError(d, where, u, d.kind === KIND.ALU ? "ACC" : "INP", s.uopSrc[u]!, src, srcDepth, "src");
      }
      if (gemmOperands) {
        const wgt = s.uopWgt[u]! + wgtSpan;
        if (wgt >= hw.wgtDepth) throw this.rangeError(d, where, u, "WGT", s.uopWgt[u]!, wgt, hw.wgtDepth, "wgt");
      }
    }
  }

  private rangeError(d: DecodedInsn, where: string, u: number, buffer: string, first: number, last: number, depth: number, field: string): FarmError {
    return new FarmError(
      "RUNTIME_ERROR",
      `VTA ${where}, instruction ${d.index} (${d.label}): micro-op ${u} (${field} ${first}) with the loop factors reaches ${buffer} SRAM index ${last}, but the ${buffer} buffer holds ${depth} elements`,
      { details: { instruction: d.index } },
    );
  }
}

/** SRAM elements a LOAD writes: its rows, padding included. */
function sramElements(d: DecodedInsn): number {
  return (d.xPad0 + d.xSize + d.xPad1) * (d.yPad0 + d.ySize + d.yPad1);
}
