/**
 * The digest of what defines a candidate's result: a results file's line is
 * reused on resume only for a candidate with the same id *and* digest, so a
 * changed generator (new source under an old id, other inputs, other timing
 * options) is measured again instead of inheriting a stale answer.
 *
 * The Python SDK computes the same digest (docs/measure.md, "Resuming a
 * batch"), so the canonical form avoids whatever the two languages write
 * differently: numbers that are not integers travel as their IEEE-754 bits.
 */
import { createHash } from "node:crypto";
import { FarmError, dtypeOf, toLaunchConfig, type AnyTypedArray } from "../../protos/index.ts";
import type { MeasureArg } from "./types.ts";
import type { TimeEvaluatorOptions } from "../session.ts";

/** The timing options a digest covers, with the defaults measure() applies. */
const TIMING_DEFAULTS = {
  number: 10,
  repeat: 3,
  minRepeatMs: 0,
  cooldownMs: 0,
  repeatsToCooldown: 1,
  limitZeroTimeIterations: 100,
  targetRse: 0,
  budgetMs: 0,
  flushL2: false,
  graph: false,
  flushCpuCache: false,
} as const;

/** measure()'s default per-candidate timeout on the board. */
export const DEFAULT_CANDIDATE_TIMEOUT_MS = 10_000;

/** What a digest is computed from: a candidate with its module's digest known (or its definition given). */
export interface DigestInput {
  /** The built module's SHA-256, or undefined when `definition` stands for it. */
  moduleDigest?: string;
  definition?: unknown;
  function: string;
  args: readonly MeasureArg[];
  atol?: number;
  rtol?: number;
  launch?: Parameters<typeof toLaunchConfig>[0];
  timeEvaluator?: Omit<TimeEvaluatorOptions, "launch" | "timeoutMs">;
  timeoutMs?: number;
}

/** SHA-256 (hex) of the canonical JSON of the candidate's definition. */
export function candidateDigest(c: DigestInput): string {
  if (c.definition === undefined && c.moduleDigest === undefined)
    throw new FarmError("INVALID_ARGUMENT", "candidateDigest: a module digest or a definition is needed");
  const launch = c.launch && toLaunchConfig(c.launch, `candidate ${c.function}`);
  const timing: Record<string, unknown> = { ...TIMING_DEFAULTS };
  for (const k of Object.keys(TIMING_DEFAULTS)) {
    const v = (c.timeEvaluator as Record<string, unknown> | undefined)?.[k];
    if (v !== undefined) timing[k] = v;
  }
  const doc = {
    v: 1,
    module: c.definition !== undefined ? { definition: c.definition } : c.moduleDigest,
    function: c.function,
    args: c.args.map(argDoc),
    atol: c.atol ?? 0,
    rtol: c.rtol ?? 0,
    launch: launch && { grid: [...launch.grid], block: [...launch.block], sharedMemBytes: launch.sharedMemBytes },
    timing,
    timeoutMs: c.timeoutMs ?? DEFAULT_CANDIDATE_TIMEOUT_MS,
  };
  return createHash("sha256").update(canonicalJson(doc)).digest("hex");
}

function bytesDigest(a: AnyTypedArray): string {
  return createHash("sha256")
    .update(new Uint8Array(a.buffer, a.byteOffset, a.byteLength))
    .digest("hex");
}

function argDoc(a: MeasureArg): unknown {
  if ("scalar" in a) return { scalar: a.scalar };
  if ("input" in a) return { input: { dtype: dtypeOf(a.input), shape: a.shape ?? [a.input.length], sha256: bytesDigest(a.input) } };
  if ("random" in a) {
    const { seed, low, high, integers } = a.random;
    return { random: { dtype: a.dtype, shape: a.shape, seed, low, high, integers: integers === true ? true : undefined } };
  }
  return { output: { dtype: a.output.dtype, shape: a.output.shape, expect: a.expect && bytesDigest(a.expect) } };
}

/**
 * JSON that two languages write byte for byte alike: keys sorted, no
 * whitespace, null/undefined-valued keys left out, integral numbers as
 * integers and any other number as `"f64:<its 16 hex digits>"`.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || value === undefined) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "string":
      return JSON.stringify(value);
    case "bigint":
      return value.toString();
    case "number": {
      if (!Number.isFinite(value)) throw new FarmError("INVALID_ARGUMENT", `candidateDigest: ${value} has no canonical form; use a finite number`);
      if (Number.isInteger(value) && Math.abs(value) < 2 ** 53) return Object.is(value, -0) ? "0" : String(value);
      const bits = new DataView(new ArrayBuffer(8));
      bits.setFloat64(0, value);
      return JSON.stringify(`f64:${bits.getBigUint64(0).toString(16).padStart(16, "0")}`);
    }
    case "object": {
      if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
      if (ArrayBuffer.isView(value)) return canonicalJson(Array.from(value as unknown as ArrayLike<number>));
      const entries = Object.entries(value as Record<string, unknown>)
        .filter(([, v]) => v !== undefined && v !== null)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
    }
    default:
      throw new FarmError("INVALID_ARGUMENT", `candidateDigest: a ${typeof value} has no canonical form (definition must be JSON data)`);
  }
}
