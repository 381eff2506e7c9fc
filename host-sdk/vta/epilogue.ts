/**
 * The output stage of a VTA kernel: the int32 accumulator, optionally shifted
 * right (SHR) and clipped (MAX then MIN — VTA has no clip instruction), then
 * truncated to int8 by the STORE (low 8 bits, no saturation).
 */
import { FarmError } from "../../protos/index.ts";
import { ALU_OP, type AluOpcode } from "../../vta/index.ts";

export interface VtaEpilogue {
  /** Arithmetic right shift of the accumulator, 0–31; 0 (default) emits no SHR. */
  shift?: number;
  /** Clip to [min, max] (ALU MAX then MIN), each within int16; absent or null: no clip. */
  clip?: readonly [number, number] | null;
}

export interface EpilogueStep {
  opcode: AluOpcode;
  imm: number;
  label: string;
}

export function checkEpilogue(e: VtaEpilogue, at: string): void {
  const shift = e.shift ?? 0;
  if (!Number.isInteger(shift) || shift < 0 || shift > 31) {
    throw new FarmError("INVALID_ARGUMENT", `${at}.shift must be an integer in 0..31, got ${JSON.stringify(e.shift)}`);
  }
  if (e.clip != null) {
    const [lo, hi] = e.clip;
    for (const [v, name] of [
      [lo, "min"],
      [hi, "max"],
    ] as const) {
      if (!Number.isInteger(v) || v < -32768 || v > 32767)
        throw new FarmError("INVALID_ARGUMENT", `${at}.clip ${name} must be an integer within int16 (an ALU immediate), got ${JSON.stringify(v)}`);
    }
    if (lo > hi) throw new FarmError("INVALID_ARGUMENT", `${at}.clip is [${lo}, ${hi}]: min is above max`);
  }
}

/** The ALU operations of the epilogue, in order. */
export function epilogueSteps(e: VtaEpilogue): EpilogueStep[] {
  const steps: EpilogueStep[] = [];
  if (e.shift) steps.push({ opcode: ALU_OP.SHR, imm: e.shift, label: `shr ${e.shift}` });
  if (e.clip != null) {
    steps.push({ opcode: ALU_OP.MAX, imm: e.clip[0], label: `max ${e.clip[0]}` });
    steps.push({ opcode: ALU_OP.MIN, imm: e.clip[1], label: `min ${e.clip[1]}` });
  }
  return steps;
}

/** The epilogue on one int32 accumulator value, ending with the STORE's int8 truncation. */
export function applyEpilogue(acc: number, e: VtaEpilogue): number {
  let v = acc | 0;
  if (e.shift) v >>= e.shift;
  if (e.clip != null) v = Math.min(Math.max(v, e.clip[0]), e.clip[1]);
  return (v << 24) >> 24;
}
