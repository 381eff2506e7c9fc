/**
 * The on-chip buffers (SRAMs) of one simulated VTA core, sized from its
 * VtaHardware: INP (int8), WGT (int8), ACC (int32) and UOP (the raw 32-bit
 * micro-ops plus their fields decoded once, when a LOAD UOP writes them).
 *
 * All buffers are views on one memory (a WebAssembly.Memory when the compute
 * core runs in WebAssembly, so its kernels address them directly); `layout`
 * gives each buffer's byte offset in it. The layout also holds the wasm
 * engine's int16 copies of INP and WGT (core-wasm.ts), which only that engine
 * reads and writes.
 */
import { FarmError } from "../../../protos/index.ts";
import { insnLayouts, type VtaHardware } from "../../../vta/index.ts";

const WASM_PAGE = 65536;

export interface SramLayout {
  inpBase: number;
  wgtBase: number;
  accBase: number;
  uopBase: number;
  uopDstBase: number;
  uopSrcBase: number;
  uopWgtBase: number;
  /** INP widened to int16 (the wasm engine's copy). */
  inp16Base: number;
  /** WGT as int16 pairs, pair-major (the wasm engine's copy). */
  wgtPairBase: number;
  totalBytes: number;
  /** Whole WebAssembly pages covering totalBytes. */
  wasmPages: number;
}

/** Byte offsets of every buffer, each 64-byte aligned. */
export function sramLayout(hw: VtaHardware): SramLayout {
  let at = 0;
  const take = (bytes: number) => {
    const base = at;
    at += Math.ceil(bytes / 64) * 64;
    return base;
  };
  const inpBase = take(hw.inpDepth * hw.inpElemBytes);
  const wgtBase = take(hw.wgtDepth * hw.wgtElemBytes);
  const accBase = take(hw.accDepth * hw.accElemBytes);
  const uopBase = take(hw.uopDepth * 4);
  const uopDstBase = take(hw.uopDepth * 4);
  const uopSrcBase = take(hw.uopDepth * 4);
  const uopWgtBase = take(hw.uopDepth * 4);
  const inp16Base = take(hw.inpDepth * hw.inpElemBytes * 2);
  const wgtPairBase = take(hw.wgtDepth * hw.wgtElemBytes * 2);
  return {
    inpBase,
    wgtBase,
    accBase,
    uopBase,
    uopDstBase,
    uopSrcBase,
    uopWgtBase,
    inp16Base,
    wgtPairBase,
    totalBytes: at,
    wasmPages: Math.ceil(at / WASM_PAGE),
  };
}

export class Srams {
  readonly layout: SramLayout;
  readonly memory: ArrayBuffer;
  /** INP: inpDepth elements of batch × blockIn int8. */
  readonly inp: Int8Array;
  /** WGT: wgtDepth elements of blockOut × blockIn int8 (row j holds the weights of output lane j). */
  readonly wgt: Int8Array;
  /** ACC: accDepth elements of batch × blockOut int32. */
  readonly acc: Int32Array;
  /** UOP: the raw 32-bit micro-ops. */
  readonly uop: Uint32Array;
  /** The fields of each micro-op, decoded when it was loaded. */
  readonly uopDst: Int32Array;
  readonly uopSrc: Int32Array;
  readonly uopWgt: Int32Array;
  private readonly uopFields: { dst: readonly [number, number]; src: readonly [number, number]; wgt: readonly [number, number] };

  constructor(
    readonly hw: VtaHardware,
    memory?: ArrayBuffer,
  ) {
    this.layout = sramLayout(hw);
    const l = this.layout;
    this.memory = memory ?? new ArrayBuffer(l.totalBytes);
    if (this.memory.byteLength < l.totalBytes)
      throw new FarmError("INTERNAL", `SRAM memory of ${this.memory.byteLength} bytes is smaller than the ${l.totalBytes} bytes needed`);
    this.inp = new Int8Array(this.memory, l.inpBase, hw.inpDepth * hw.inpElemBytes);
    this.wgt = new Int8Array(this.memory, l.wgtBase, hw.wgtDepth * hw.wgtElemBytes);
    this.acc = new Int32Array(this.memory, l.accBase, (hw.accDepth * hw.accElemBytes) / 4);
    this.uop = new Uint32Array(this.memory, l.uopBase, hw.uopDepth);
    this.uopDst = new Int32Array(this.memory, l.uopDstBase, hw.uopDepth);
    this.uopSrc = new Int32Array(this.memory, l.uopSrcBase, hw.uopDepth);
    this.uopWgt = new Int32Array(this.memory, l.uopWgtBase, hw.uopDepth);
    this.uopFields = insnLayouts(hw).uop;
  }

  /** Decodes the fields of the `count` micro-ops at `index` (after a LOAD UOP wrote their raw words). */
  decodeUops(index: number, count: number): void {
    const { dst, src, wgt } = this.uopFields;
    const dm = 2 ** dst[1] - 1;
    const sm = 2 ** src[1] - 1;
    const wm = 2 ** wgt[1] - 1;
    const raw = this.uop;
    for (let k = index; k < index + count; k++) {
      const w = raw[k]!;
      this.uopDst[k] = (w >>> dst[0]) & dm;
      this.uopSrc[k] = (w >>> src[0]) & sm;
      this.uopWgt[k] = (w >>> wgt[0]) & wm;
    }
  }

  /** Zeroes every buffer (between sessions). */
  clear(): void {
    new Uint8Array(this.memory, 0, this.layout.totalBytes).fill(0);
  }
}
