/**
 * The closed set of outcomes as the farm's errors map onto them, and the
 * candidates refused before anything runs. Pure rules: what the pipeline and
 * the Measurer do with an outcome (record it, measure again, stop the batch)
 * is theirs.
 */
import { FarmError } from "../../protos/index.ts";
import { fillProblem } from "../../domain/index.ts";
import type { Candidate, MeasureOutcome } from "./types.ts";

/** Request failures that no waiting heals: the batch stops with them. */
export const HOPELESS = new Set(["UNAUTHENTICATED", "PERMISSION_DENIED", "INVALID_ARGUMENT"]);

/**
 * A board's failure or a kernel's, by the farm's error code. `sessionLost`:
 * the session can serve nothing more (its worker died or hung, its context
 * is gone), so the board needs another and the candidates queued behind on
 * it are not this one's to answer for.
 */
export function outcomeOf(err: unknown): { outcome: MeasureOutcome; message: string; sessionLost: boolean } {
  const e = FarmError.from(err);
  const message = `${e.code}: ${e.message}`;
  switch (e.code) {
    case "COMPILE_ERROR":
    case "TOOLCHAIN_MISSING":
      return { outcome: "COMPILE_ERROR", message, sessionLost: false };
    case "BAD_BUNDLE":
    case "TARGET_MISMATCH":
    case "LOAD_ERROR":
    case "UNKNOWN_FUNCTION":
      return { outcome: "LOAD_ERROR", message, sessionLost: false };
    case "TIMEOUT":
      return { outcome: "TIMEOUT", message, sessionLost: true };
    case "RUNTIME_CRASH":
      return { outcome: "RUNTIME_ERROR", message, sessionLost: true };
    case "DEVICE_ERROR":
      // A sticky device error loses the context: the session can do nothing more.
      return { outcome: "RUNTIME_ERROR", message, sessionLost: e.details?.sticky === true };
    case "LAUNCH_ERROR":
      return { outcome: "INVALID_CONFIG", message, sessionLost: false };
    case "RUNTIME_ERROR":
    case "BAD_ARGUMENTS":
    case "OUT_OF_MEMORY":
    case "TOO_LARGE":
      return { outcome: "RUNTIME_ERROR", message, sessionLost: false };
    default:
      return { outcome: "INFRA_ERROR", message, sessionLost: true };
  }
}

/** What a result keeps of outcomeOf's answer: whether the session was lost is the pipeline's business, not the caller's. */
export function outcomeFields(o: { outcome: MeasureOutcome; message: string }): { outcome: MeasureOutcome; message: string } {
  return { outcome: o.outcome, message: o.message };
}

/** A candidate that cannot be measured as written (the script's bug): refused before anything runs. */
export function checkCandidate(c: Candidate, id: string): void {
  const refuse = (what: string) => {
    throw new FarmError("INVALID_ARGUMENT", `measure: candidate ${id}: ${what}`);
  };
  let outputs = 0;
  c.args.forEach((a, i) => {
    if ("random" in a) {
      const problem = fillProblem(a.dtype, a.random);
      if (problem) refuse(`argument ${i}, a random ${a.dtype} input: ${problem}`);
    } else if ("output" in a) {
      outputs++;
      if (a.expect && c.reference) refuse(`argument ${i} has an expect and the candidate a reference function: give one`);
    }
  });
  if (c.reference && outputs === 0) refuse("a reference function, but no output arguments to check");
}
