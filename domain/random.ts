/**
 * Seeded inputs: the one generator boards fill arrays with (the `fill`
 * session op) and hosts reproduce for their references, so a tuner's inputs
 * never cross the network and both sides hold the same bytes.
 *
 * Counter-based, so any element can be made on its own and the definition
 * fits in a line (other languages can reproduce it): element i of seed s is
 * drawn from h = mix(i · 0x9E3779B1 + mix(s ⊕ 0x85EBCA6B)) (32-bit
 * arithmetic; mix is Wellons' lowbias32). Floating point types take
 * low + (h >>> 8) / 2^24 · (high − low), computed in float64 and stored in
 * the array's type (with the default [-1, 1) every value is exact); integer
 * types, and floating point ones with `integers`, take
 * low + ⌊h / 2^32 · (high − low + 1)⌋, in [low, high].
 */
import { FarmError } from "../protos/errors.ts";
import { DTYPES, integerRange, type AnyTypedArray, type Dtype } from "../protos/dtype.ts";

export interface RandomFill {
  /** Any 32-bit unsigned integer. */
  seed: number;
  /** Floating point: [low, high), default [-1, 1). Integers: [low, high] inclusive, default [-128, 127] (signed) or [0, 255]. */
  low?: number;
  high?: number;
  /**
   * Floating point types: whole numbers in [low, high] instead. Sums of
   * their products stay exact in float32 (up to 2^24), so a kernel that
   * reorders a reduction can still be checked exactly.
   */
  integers?: boolean;
}

/** The range used for `dtype` when a fill gives none. */
export function fillRange(dtype: Dtype, fill: RandomFill): { low: number; high: number } {
  const range = integerRange(dtype);
  const signed = range !== undefined && range[0] < 0;
  return {
    low: fill.low ?? (!range ? -1 : signed ? -128 : 0),
    high: fill.high ?? (!range ? 1 : signed ? 127 : 255),
  };
}

/** What is wrong with `fill` for `dtype`, or undefined. */
export function fillProblem(dtype: Dtype, fill: RandomFill): string | undefined {
  if (!Number.isInteger(fill.seed) || fill.seed < 0 || fill.seed > 0xffffffff) return `the seed must be an integer in [0, 2^32), got ${fill.seed}`;
  const { low, high } = fillRange(dtype, fill);
  if (!Number.isFinite(low) || !Number.isFinite(high) || low > high) return `the range [${low}, ${high}] is empty or not finite`;
  const range = integerRange(dtype);
  if (!range && !fill.integers) return undefined;
  if (!Number.isSafeInteger(low) || !Number.isSafeInteger(high)) return `an integer range needs integer bounds, got [${low}, ${high}]`;
  if (range && (low < range[0] || high > range[1])) return `[${low}, ${high}] does not fit ${dtype} ([${range[0]}, ${range[1]}])`;
  return undefined;
}

function mix(x: number): number {
  x ^= x >>> 16;
  x = Math.imul(x, 0x7feb352d);
  x ^= x >>> 15;
  x = Math.imul(x, 0x846ca68b);
  x ^= x >>> 16;
  return x >>> 0;
}

/** `count` elements of `dtype` from `fill`'s generator (see the file comment). */
export function randomArray(dtype: Dtype, count: number, fill: RandomFill): AnyTypedArray {
  const problem = fillProblem(dtype, fill);
  if (problem) throw new FarmError("INVALID_ARGUMENT", `random ${dtype} input: ${problem}`);
  const { low, high } = fillRange(dtype, fill);
  const key = mix((fill.seed ^ 0x85ebca6b) >>> 0);
  const out = new DTYPES[dtype].array(count);
  if (!integerRange(dtype) && !fill.integers) {
    const f = out as Float32Array | Float64Array;
    const scale = (high - low) / 2 ** 24;
    for (let i = 0; i < count; i++) f[i] = low + (mix((Math.imul(i, 0x9e3779b1) + key) >>> 0) >>> 8) * scale;
  } else if (out instanceof BigInt64Array || out instanceof BigUint64Array) {
    const span = high - low + 1;
    for (let i = 0; i < count; i++) out[i] = BigInt(low + Math.floor((mix((Math.imul(i, 0x9e3779b1) + key) >>> 0) / 2 ** 32) * span));
  } else {
    const n = out as Exclude<AnyTypedArray, BigInt64Array | BigUint64Array>;
    const span = high - low + 1;
    for (let i = 0; i < count; i++) n[i] = low + Math.floor((mix((Math.imul(i, 0x9e3779b1) + key) >>> 0) / 2 ** 32) * span);
  }
  return out;
}
