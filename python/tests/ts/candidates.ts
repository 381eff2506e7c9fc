/**
 * Candidates described in JSON, as python/tests/candidates.py writes them from
 * Python ones, made into the TypeScript SDK's: the same arguments (arrays as
 * the bytes a board holds, base64), definition, tolerances, launch and
 * timing — so that both SDKs can be asked about the same candidate.
 */
import { viewAs, type Dtype } from "../../../protos/index.ts";
import type { Candidate, MeasureArg } from "../../../host-sdk/index.ts";

/** An array: its dtype, its bytes (C order, little-endian) in base64, and its shape. */
export interface ArrayDescription {
  dtype: Dtype;
  base64: string;
  shape?: number[];
}

export type ArgDescription =
  | { input: ArrayDescription }
  | { random: { seed: number; low?: number; high?: number; integers?: boolean }; shape: number[]; dtype: Dtype }
  | { output: { shape: number[]; dtype: Dtype }; expect?: ArrayDescription }
  | { scalar: number };

export interface CandidateDescription {
  id?: string;
  /** The built module's digest, for a candidate without a definition. */
  moduleDigest?: string;
  definition?: unknown;
  function: string;
  args: ArgDescription[];
  atol?: number;
  rtol?: number;
  launch?: { grid: number | number[]; block: number | number[]; sharedMemBytes?: number };
  timeEvaluator?: Record<string, number | boolean>;
  timeoutMs?: number;
}

export function arrayOf(a: ArrayDescription) {
  return viewAs(a.dtype, Uint8Array.from(Buffer.from(a.base64, "base64")));
}

export function argOf(a: ArgDescription): MeasureArg {
  if ("input" in a) return { input: arrayOf(a.input), ...(a.input.shape ? { shape: a.input.shape } : {}) };
  if ("output" in a) return { output: a.output, ...(a.expect ? { expect: arrayOf(a.expect) } : {}) };
  return a as MeasureArg;
}

/** The TypeScript candidate, with a module that must never be built (it is to come from a results file). */
export function candidateOf(d: CandidateDescription): Candidate {
  return {
    ...(d.id !== undefined ? { id: d.id } : {}),
    module: () => Promise.reject(new Error(`candidate ${d.id} was built again: the results file did not hold it`)),
    ...(d.definition !== undefined ? { definition: d.definition } : {}),
    function: d.function,
    args: d.args.map(argOf),
    ...(d.atol !== undefined ? { atol: d.atol } : {}),
    ...(d.rtol !== undefined ? { rtol: d.rtol } : {}),
    ...(d.launch ? { launch: d.launch } : {}),
  } as Candidate;
}
