import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { medianRse } from "../../domain/index.ts";
import { evaluateTime, type TimeEvaluatorSettings } from "./time-evaluator.ts";

const BASE: TimeEvaluatorSettings = {
  number: 1,
  repeat: 3,
  minRepeatMs: 0,
  cooldownMs: 0,
  repeatsToCooldown: 1,
  limitZeroTimeIterations: 100,
  targetRse: 0,
  budgetMs: 0,
};

/** Call times of 1000 ns with ±`spread` relative noise, the same sequence in every run (a small LCG). */
function noisy(spread: number): (k: number) => number {
  let x = 12345;
  return () => {
    x = (x * 1103515245 + 12345) % 2147483648;
    return Math.round(1000 * (1 + spread * (x / 2147483648 - 0.5)));
  };
}

/** A kernel whose calls take `ns(k)` nanoseconds for the k-th timed batch (the warm-up is not timed). */
function run(settings: Partial<TimeEvaluatorSettings>, ns: (k: number) => number) {
  let k = 0;
  return evaluateTime(
    { ...BASE, ...settings },
    () => {},
    (n) => n * ns(k++),
  );
}

describe("evaluateTime's precision target", () => {
  it("without one, runs exactly `repeat` repeats", () => {
    const r = run({ repeat: 4 }, noisy(0.2));
    assert.deepEqual([r.resultsS.length, r.stoppedBy], [4, "repeat"]);
  });

  it("adds repeats until the median's relative standard error is within the target, and not one more", () => {
    const r = run({ repeat: 3, targetRse: 0.005, budgetMs: 60_000 }, noisy(0.2));
    assert.equal(r.stoppedBy, "precision");
    assert.ok(medianRse(r.resultsS) <= 0.005, `rse ${medianRse(r.resultsS)}`);
    assert.ok(r.resultsS.length > 10 && medianRse(r.resultsS.slice(0, -1)) > 0.005, `${r.resultsS.length} repeats: not one more than needed`);
  });

  it("trusts no estimate from fewer than MIN_PRECISION_REPEATS repeats", () => {
    const r = run({ repeat: 2, targetRse: 0.5, budgetMs: 60_000 }, noisy(0.01));
    assert.deepEqual([r.stoppedBy, r.resultsS.length], ["precision", 10]);
  });

  it("an outlier repeat does not hold the target out of reach", () => {
    const base = noisy(0.05);
    const r = run({ repeat: 5, targetRse: 0.01, budgetMs: 60_000 }, (k) => (k === 2 ? 50_000 : base(k)));
    assert.equal(r.stoppedBy, "precision");
    assert.ok(r.resultsS.length < 100, `${r.resultsS.length} repeats`);
  });

  it("stops at the budget when the target is out of reach, saying so", () => {
    const started = performance.now();
    const r = run({ repeat: 2, targetRse: 1e-9, budgetMs: 50 }, noisy(0.2));
    assert.equal(r.stoppedBy, "budget");
    assert.ok(performance.now() - started >= 50);
    assert.ok(medianRse(r.resultsS) > 1e-9);
  });

  it("medianRse: √(π/2)·1.4826·MAD/√n over the median; none from one sample, zero when most are equal", () => {
    assert.equal(medianRse([1]), Infinity);
    assert.equal(medianRse([2, 2, 2, 9]), 0);
    // [1, 2, 3, 4]: median 2.5, absolute deviations 1.5, 0.5, 0.5, 1.5: MAD 1.
    assert.ok(Math.abs(medianRse([1, 2, 3, 4]) - (Math.sqrt(Math.PI / 2) * 1.4826 * 1) / 2 / 2.5) < 1e-12);
  });
});
