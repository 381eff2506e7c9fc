/**
 * measure()'s `remeasure` option resolved once per batch: which OK results
 * are measured again on the same session, and how often at most. Checked
 * before anything runs, so a script's mistake costs no board time.
 */
import { FarmError, checkOption } from "../../protos/index.ts";
import { DEFAULT_REMEASURE_TIMES, type MeasureOptions, type MeasureResult, type RemeasureOptions } from "./types.ts";

/** remeasure's default test. */
export function measuredWhileThrottled(r: MeasureResult): boolean {
  return r.throttled === true;
}

/** `remeasure` with its defaults, or undefined when off. */
export function resolveRemeasure(o: MeasureOptions["remeasure"]): Required<RemeasureOptions> | undefined {
  if (!o) return undefined;
  const { when = measuredWhileThrottled, times = DEFAULT_REMEASURE_TIMES } = o === true ? {} : o;
  checkOption("remeasure", "times", times);
  if (typeof when !== "function") throw new FarmError("INVALID_ARGUMENT", "measure: remeasure.when must be a function of a result");
  return { when, times };
}
