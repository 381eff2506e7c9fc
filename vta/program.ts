/**
 * A compiled VTA function: what the host compiler puts in a bundle's binary
 * and what a VTA board runs. One function is one or more device runs; each run
 * is an instruction stream plus the micro-op DMA buffer it loads from.
 *
 * DRAM addresses in the stream are **element offsets inside the buffer they
 * name** (before the runtime's `phys_addr / elem_bytes` is added); the
 * relocations say which buffer each LOAD / STORE addresses, so the board can
 * place the buffers in its DRAM and patch the addresses.
 */
import { pack, unpack } from "msgpackr";

/** `buffer` of a relocation that points into the run's own micro-op buffer. */
export const UOP_BUFFER = -1;

export interface Relocation {
  /** Instruction index in the run. */
  insn: number;
  /** Index of the function parameter (a buffer), or UOP_BUFFER. */
  buffer: number;
}

export interface VtaRun {
  /** n × 16 bytes, encoded with vta/isa.ts. */
  insns: Uint8Array;
  /** The micro-op DMA buffer: 4 bytes per uop, kernels concatenated. */
  uops: Uint8Array;
  relocations: Relocation[];
}

export interface VtaFunction {
  runs: VtaRun[];
}

/** The bundle binary of a VTA module: its hardware name and its functions. */
export interface VtaBinary {
  /** VtaHardware.name the program was compiled for, e.g. "1x16_i8w8a32_15_15_18_17". */
  hardware: string;
  functions: Record<string, VtaFunction>;
}

export function encodeVtaBinary(binary: VtaBinary): Uint8Array {
  return pack(binary);
}

export function decodeVtaBinary(bytes: Uint8Array): VtaBinary {
  const v = unpack(bytes) as VtaBinary;
  if (typeof v !== "object" || v === null || typeof v.hardware !== "string" || typeof v.functions !== "object") {
    throw new TypeError("not a VTA binary: expected { hardware, functions }");
  }
  return v;
}
