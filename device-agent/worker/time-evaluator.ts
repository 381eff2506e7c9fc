/**
 * TVM's time_evaluator, run in the worker next to the board:
 * one discarded warm-up call per evaluation; then `repeat` repeats of
 * `number` calls, where `number` grows (max(min_repeat_ms / per-call + 1,
 * 1.618 × number)) until a repeat lasts `minRepeatMs` and stays grown;
 * a measurement of exactly 0 ns does not grow `number` and at most
 * `limitZeroTimeIterations` of them end the loop; a cooldown sleep follows
 * repeat i when i % repeatsToCooldown == 0. Results are seconds per call.
 */

export interface TimeEvaluatorSettings {
  number: number;
  repeat: number;
  minRepeatMs: number;
  cooldownMs: number;
  repeatsToCooldown: number;
  limitZeroTimeIterations: number;
}

export interface TimeEvaluation {
  resultsS: number[];
  number: number;
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));

function sleepMs(ms: number): void {
  if (ms > 0) Atomics.wait(sleeper, 0, 0, ms);
}

/** `timeCalls(n)` runs the function n times and returns the elapsed nanoseconds. */
export function evaluateTime(settings: TimeEvaluatorSettings, warmUp: () => void, timeCalls: (n: number) => number): TimeEvaluation {
  let number = Math.max(1, settings.number);
  const resultsS: number[] = [];
  warmUp();
  for (let i = 0; i < settings.repeat; i++) {
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
  }
  return { resultsS, number };
}
