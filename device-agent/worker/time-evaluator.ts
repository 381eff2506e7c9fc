/**
 * TVM's time_evaluator, run in the worker next to the board:
 * one discarded warm-up call per evaluation; then `repeat` repeats of
 * `number` calls, where `number` grows (max(min_repeat_ms / per-call + 1,
 * 1.618 × number)) until a repeat lasts `minRepeatMs` and stays grown;
 * a measurement of exactly 0 ns does not grow `number` and at most
 * `limitZeroTimeIterations` of them end the loop; a cooldown sleep follows
 * repeat i when i % repeatsToCooldown == 0. Results are seconds per call.
 *
 * With a precision target (`targetRse` > 0), repeats go on after `repeat`
 * (to MIN_PRECISION_REPEATS at least) until the median's relative standard
 * error is at most the target
 * (domain/precision.ts), the budget ends, or MAX_PRECISION_REPEATS; the
 * result says which.
 */
import { DEFAULT_PRECISION_BUDGET_MS, MAX_PRECISION_REPEATS, MIN_PRECISION_REPEATS, medianRse } from "../../domain/index.ts";

export interface TimeEvaluatorSettings {
  number: number;
  repeat: number;
  minRepeatMs: number;
  cooldownMs: number;
  repeatsToCooldown: number;
  limitZeroTimeIterations: number;
  /** 0: exactly `repeat` repeats. */
  targetRse: number;
  /** With targetRse: how long to add repeats at most; 0: DEFAULT_PRECISION_BUDGET_MS. */
  budgetMs: number;
}

export type StoppedBy = "repeat" | "precision" | "budget" | "max_repeats";

export interface TimeEvaluation {
  resultsS: number[];
  number: number;
  stoppedBy: StoppedBy;
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));

function sleepMs(ms: number): void {
  if (ms > 0) Atomics.wait(sleeper, 0, 0, ms);
}

/** `timeCalls(n)` runs the function n times and returns the elapsed nanoseconds. */
export function evaluateTime(settings: TimeEvaluatorSettings, warmUp: () => void, timeCalls: (n: number) => number): TimeEvaluation {
  let number = Math.max(1, settings.number);
  const resultsS: number[] = [];
  const started = performance.now();
  const repeatOnce = (i: number) => {
    let durationMs = 0;
    let zeros = 0;
    do {
      if (durationMs > 0) {
        number = Math.trunc(Math.max(settings.minRepeatMs / (durationMs / number) + 1, number * 1.618));
      }
      const ns = timeCalls(number);
      if (ns === 0) zeros++;
      durationMs = ns / 1e6;
    } while (durationMs < settings.minRepeatMs && zeros < settings.limitZeroTimeIterations);
    resultsS.push(durationMs / 1e3 / number);
    if (settings.cooldownMs > 0 && i % Math.max(1, settings.repeatsToCooldown) === 0) sleepMs(settings.cooldownMs);
  };
  warmUp();
  for (let i = 0; i < settings.repeat; i++) repeatOnce(i);
  if (!(settings.targetRse > 0)) return { resultsS, number, stoppedBy: "repeat" };
  const budgetMs = settings.budgetMs > 0 ? settings.budgetMs : DEFAULT_PRECISION_BUDGET_MS;
  for (let i = settings.repeat; ; i++) {
    if (resultsS.length >= MIN_PRECISION_REPEATS && medianRse(resultsS) <= settings.targetRse) return { resultsS, number, stoppedBy: "precision" };
    if (performance.now() - started >= budgetMs) return { resultsS, number, stoppedBy: "budget" };
    if (resultsS.length >= MAX_PRECISION_REPEATS) return { resultsS, number, stoppedBy: "max_repeats" };
    repeatOnce(i);
  }
}
