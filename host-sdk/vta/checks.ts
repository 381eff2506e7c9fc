/**
 * Argument checks shared by the VTA templates: malformed requests are
 * INVALID_ARGUMENT; well-formed requests that VTA cannot run as scheduled
 * (indivisible shapes, tiles that overflow an on-chip buffer) are
 * COMPILE_ERROR, with the buffer, the size needed and the size available.
 */
import { FarmError } from "../../protos/index.ts";
import type { VtaHardware } from "../../vta/index.ts";

export function positiveInt(value: unknown, field: string): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value <= 0) {
    throw new FarmError("INVALID_ARGUMENT", `${field} must be a positive integer, got ${JSON.stringify(value)}`, { details: { field } });
  }
  return value;
}

export function nonNegativeInt(value: unknown, field: string): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0) {
    throw new FarmError("INVALID_ARGUMENT", `${field} must be a non-negative integer, got ${JSON.stringify(value)}`, { details: { field } });
  }
  return value;
}

export function oneOf<T extends string | number>(value: unknown, allowed: readonly T[], field: string): T {
  if (!allowed.includes(value as T)) {
    throw new FarmError("INVALID_ARGUMENT", `${field} must be one of ${allowed.map((a) => JSON.stringify(a)).join(", ")}, got ${JSON.stringify(value)}`, {
      details: { field },
    });
  }
  return value as T;
}

/** `total` must split into whole blocks of `block`. */
export function divisible(what: string, total: number, block: number, blockWhat: string): void {
  if (total % block !== 0) {
    throw new FarmError("COMPILE_ERROR", `${what} (${total}) is not divisible by ${blockWhat} (${block})`, { details: { total, block } });
  }
}

export type OnChipBuffer = "INP" | "WGT" | "ACC" | "UOP";

export function bufferDepth(hw: VtaHardware, buffer: OnChipBuffer): { depth: number; elemBytes: number } {
  switch (buffer) {
    case "INP":
      return { depth: hw.inpDepth, elemBytes: hw.inpElemBytes };
    case "WGT":
      return { depth: hw.wgtDepth, elemBytes: hw.wgtElemBytes };
    case "ACC":
      return { depth: hw.accDepth, elemBytes: hw.accElemBytes };
    case "UOP":
      return { depth: hw.uopDepth, elemBytes: hw.uopElemBytes };
  }
}

/** Throws COMPILE_ERROR when `needed` elements do not fit `buffer`; `what` says what needs them and how it adds up. */
export function fitsBuffer(hw: VtaHardware, buffer: OnChipBuffer, needed: number, what: string): void {
  const { depth, elemBytes } = bufferDepth(hw, buffer);
  if (needed > depth) {
    throw new FarmError(
      "COMPILE_ERROR",
      `schedule does not fit the ${buffer} buffer: ${what} needs ${needed} elements (${needed * elemBytes} B), the ${buffer} buffer holds ${depth} (${depth * elemBytes} B); use smaller tiles`,
      { details: { buffer, needed, available: depth, neededBytes: needed * elemBytes, availableBytes: depth * elemBytes } },
    );
  }
}

/**
 * The first schedule, in order of preference, that `check` accepts. When none
 * does, the first one's refusal is the most useful message; `none` is used
 * only when there was no candidate or a refusal was not a FarmError.
 */
export function firstFitting<S>(candidates: readonly S[], check: (s: S) => void, none: () => FarmError): S {
  let firstProblem: unknown;
  for (const s of candidates) {
    try {
      check(s);
      return s;
    } catch (err) {
      firstProblem ??= err;
    }
  }
  if (firstProblem instanceof FarmError) throw firstProblem;
  throw none();
}

/** Divisors of n, largest first. */
export function divisorsDesc(n: number): number[] {
  const out: number[] = [];
  for (let d = n; d >= 1; d--) if (n % d === 0) out.push(d);
  return out;
}
