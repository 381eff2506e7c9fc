/**
 * The VTA ISA: instructions (128 bits, two little-endian 64-bit words) and
 * micro-ops (32 bits), as plain objects, with encode / decode to the real bit
 * layouts (include/vta/hw_spec.h). Field widths follow the configuration;
 * a field that would cross bit 64 starts at bit 64, as the C bit-fields do.
 */
import { DEFAULT_VTA_HARDWARE, type VtaHardware } from "./config.ts";

export const OPCODE = { LOAD: 0, STORE: 1, GEMM: 2, FINISH: 3, ALU: 4 } as const;
export const MEM = { UOP: 0, WGT: 1, INP: 2, ACC: 3, OUT: 4, ACC_8BIT: 5 } as const;
export const ALU_OP = { MIN: 0, MAX: 1, ADD: 2, SHR: 3, MUL: 4 } as const;

export type MemoryType = (typeof MEM)[keyof typeof MEM];
export type AluOpcode = (typeof ALU_OP)[keyof typeof ALU_OP];

/** Dependency-token flags every instruction carries (§3 of docs/vta-isa.md). */
export interface DepFlags {
  popPrev: boolean;
  popNext: boolean;
  pushPrev: boolean;
  pushNext: boolean;
}

/** LOAD (opcode 0) or STORE (opcode 1). `xSize == 0` marks a NOP. `dramBase` counts elements. */
export interface MemInsn extends DepFlags {
  opcode: typeof OPCODE.LOAD | typeof OPCODE.STORE;
  memoryType: MemoryType;
  sramBase: number;
  dramBase: number;
  ySize: number;
  xSize: number;
  xStride: number;
  yPad0: number;
  yPad1: number;
  xPad0: number;
  xPad1: number;
}

/** Loop nest shared by GEMM and ALU: `for y < iterOut, x < iterIn, u in [uopBgn, uopEnd)`. */
export interface LoopFields {
  resetReg: boolean;
  uopBgn: number;
  uopEnd: number;
  iterOut: number;
  iterIn: number;
  dstFactorOut: number;
  dstFactorIn: number;
  srcFactorOut: number;
  srcFactorIn: number;
}

export interface GemmInsn extends DepFlags, LoopFields {
  opcode: typeof OPCODE.GEMM;
  wgtFactorOut: number;
  wgtFactorIn: number;
}

export interface AluInsn extends DepFlags, LoopFields {
  opcode: typeof OPCODE.ALU;
  aluOpcode: AluOpcode;
  useImm: boolean;
  /** Signed 16-bit immediate. */
  imm: number;
}

export interface FinishInsn extends DepFlags {
  opcode: typeof OPCODE.FINISH;
}

export type Insn = MemInsn | GemmInsn | AluInsn | FinishInsn;

export interface Uop {
  /** ACC index. */
  dst: number;
  /** INP index (GEMM) or ACC index (ALU). */
  src: number;
  /** WGT index (GEMM only). */
  wgt: number;
}

export const NO_DEPS: Readonly<DepFlags> = Object.freeze({ popPrev: false, popNext: false, pushPrev: false, pushNext: false });

// ---- bit layouts

type Field = readonly [name: string, width: number, signed?: boolean];
interface PlacedField {
  name: string;
  lo: number;
  width: number;
  signed: boolean;
}

function place(fields: readonly Field[]): PlacedField[] {
  let bit = 0;
  return fields.map(([name, width, signed]) => {
    if (bit < 64 && bit + width > 64) bit = 64;
    const f = { name, lo: bit, width, signed: signed ?? false };
    bit += width;
    if (bit > 128) throw new Error(`VTA instruction layout overflows 128 bits at field ${name}`);
    return f;
  });
}

const HEADER: Field[] = [
  ["opcode", 3],
  ["popPrev", 1],
  ["popNext", 1],
  ["pushPrev", 1],
  ["pushNext", 1],
];

export interface InsnLayouts {
  mem: PlacedField[];
  gemm: PlacedField[];
  alu: PlacedField[];
  finish: PlacedField[];
  uop: { dst: [number, number]; src: [number, number]; wgt: [number, number] };
}

const layoutCache = new WeakMap<VtaHardware, InsnLayouts>();

/** Bit positions of every field for this hardware configuration. */
export function insnLayouts(hw: VtaHardware = DEFAULT_VTA_HARDWARE): InsnLayouts {
  let l = layoutCache.get(hw);
  if (l) return l;
  const LOOP_ITER_WIDTH = 14;
  const loop = (srcDepth: number): Field[] => [
    ["resetReg", 1],
    ["uopBgn", hw.logUopDepth],
    ["uopEnd", hw.logUopDepth + 1],
    ["iterOut", LOOP_ITER_WIDTH],
    ["iterIn", LOOP_ITER_WIDTH],
    ["dstFactorOut", hw.logAccDepth],
    ["dstFactorIn", hw.logAccDepth],
    ["srcFactorOut", srcDepth],
    ["srcFactorIn", srcDepth],
  ];
  const srcWidth = Math.max(hw.logInpDepth, hw.logAccDepth);
  l = {
    mem: place([
      ...HEADER,
      ["memoryType", 3],
      ["sramBase", 16],
      ["dramBase", 32],
      ["ySize", 16],
      ["xSize", 16],
      ["xStride", 16],
      ["yPad0", 4],
      ["yPad1", 4],
      ["xPad0", 4],
      ["xPad1", 4],
    ]),
    gemm: place([...HEADER, ...loop(hw.logInpDepth), ["wgtFactorOut", hw.logWgtDepth], ["wgtFactorIn", hw.logWgtDepth]]),
    alu: place([...HEADER, ...loop(hw.logAccDepth), ["aluOpcode", 3], ["useImm", 1], ["imm", 16, true]]),
    finish: place(HEADER),
    uop: { dst: [0, hw.logAccDepth], src: [hw.logAccDepth, srcWidth], wgt: [hw.logAccDepth + srcWidth, hw.logWgtDepth] },
  };
  layoutCache.set(hw, l);
  return l;
}

function layoutOf(opcode: number, l: InsnLayouts): PlacedField[] {
  switch (opcode) {
    case OPCODE.LOAD:
    case OPCODE.STORE:
      return l.mem;
    case OPCODE.GEMM:
      return l.gemm;
    case OPCODE.ALU:
      return l.alu;
    case OPCODE.FINISH:
      return l.finish;
    default:
      throw new RangeError(`unknown VTA opcode ${opcode}`);
  }
}

/** Encodes one instruction into 16 bytes at `out[offset..]`. Values must fit their fields. */
export function encodeInsn(insn: Insn, hw: VtaHardware = DEFAULT_VTA_HARDWARE, out = new Uint8Array(16), offset = 0): Uint8Array {
  const fields = layoutOf(insn.opcode, insnLayouts(hw));
  let lo = 0n;
  let hi = 0n;
  const rec = insn as unknown as Record<string, number | boolean>;
  for (const f of fields) {
    const raw = rec[f.name];
    let v = typeof raw === "boolean" ? (raw ? 1 : 0) : (raw ?? 0);
    const max = 2 ** f.width;
    if (f.signed) {
      if (v < -(max / 2) || v >= max / 2) throw new RangeError(`${f.name} = ${v} does not fit a signed ${f.width}-bit field`);
      if (v < 0) v += max;
    } else if (!Number.isInteger(v) || v < 0 || v >= max) {
      throw new RangeError(`${f.name} = ${v} does not fit an unsigned ${f.width}-bit field`);
    }
    const big = BigInt(v);
    if (f.lo >= 64) hi |= big << BigInt(f.lo - 64);
    else lo |= big << BigInt(f.lo);
  }
  const view = new DataView(out.buffer, out.byteOffset + offset, 16);
  view.setBigUint64(0, lo, true);
  view.setBigUint64(8, hi, true);
  return out;
}

/** Decodes the 16 bytes at `bytes[offset..]`; throws RangeError on an unknown opcode. */
export function decodeInsn(bytes: Uint8Array, offset = 0, hw: VtaHardware = DEFAULT_VTA_HARDWARE): Insn {
  const view = new DataView(bytes.buffer, bytes.byteOffset + offset, 16);
  const lo = view.getBigUint64(0, true);
  const hi = view.getBigUint64(8, true);
  const opcode = Number(lo & 7n);
  const fields = layoutOf(opcode, insnLayouts(hw));
  const rec: Record<string, number | boolean> = {};
  for (const f of fields) {
    const word = f.lo >= 64 ? hi : lo;
    const shift = BigInt(f.lo >= 64 ? f.lo - 64 : f.lo);
    let v = Number((word >> shift) & ((1n << BigInt(f.width)) - 1n));
    if (f.signed && v >= 2 ** (f.width - 1)) v -= 2 ** f.width;
    rec[f.name] = v;
  }
  for (const flag of ["popPrev", "popNext", "pushPrev", "pushNext", "resetReg", "useImm"]) {
    if (flag in rec) rec[flag] = rec[flag] === 1;
  }
  return rec as unknown as Insn;
}

export function encodeUop(uop: Uop, hw: VtaHardware = DEFAULT_VTA_HARDWARE): number {
  const { dst, src, wgt } = insnLayouts(hw).uop;
  for (const [name, v, [, w]] of [
    ["dst", uop.dst, dst],
    ["src", uop.src, src],
    ["wgt", uop.wgt, wgt],
  ] as const) {
    if (!Number.isInteger(v) || v < 0 || v >= 2 ** w) throw new RangeError(`uop ${name} = ${v} does not fit ${w} bits`);
  }
  return ((uop.dst << dst[0]) | (uop.src << src[0]) | (uop.wgt << wgt[0])) >>> 0;
}

export function decodeUop(word: number, hw: VtaHardware = DEFAULT_VTA_HARDWARE): Uop {
  const { dst, src, wgt } = insnLayouts(hw).uop;
  const bits = (lo: number, w: number) => (word >>> lo) & ((1 << w) - 1);
  return { dst: bits(dst[0], dst[1]), src: bits(src[0], src[1]), wgt: bits(wgt[0], wgt[1]) };
}
