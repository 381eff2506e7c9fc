import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { medianRse } from "../../protos/index.ts";
import { evaluateTime, type TimeEvaluatorSettings } from "./time-evaluator.ts";

const BASE: TimeEvaluatorSettings = { number: 1, repeat: 3, minRepeatMs: 0, cooldownMs: 0, repeatsToCooldown: 1, limitZeroTimeIterations: 100, targetRse: 0, budgetMs: 0 };

/** A kernel whose calls take `ns(k)` nanoseconds for the k-th timed batch (the warm-up is not timed). */
function run(settings: Partial<TimeEvaluatorSettings>, ns: (k: number) => number) {
  let k = 0;
  return evaluateTime({ ...BASE, ...settings }, () => {}, (n) => n * ns(k++));
}

describe("evaluateTime's precision target", () => {
  it("without one, runs exactly `repeat` repeats", () => {
    const r = run({ repeat: 4 }, (k) => 1000 + (k % 2) * 500);
    assert.deepEqual([r.resultsS.length, r.stoppedBy], [4, "repeat"]);
  });

  it("adds repeats until the median's relative standard error is within the target", () => {
    // Alternating 1000 / 1100 ns: the error falls as 1/√n.
    const r = run({ repeat: 3, targetRse: 0.01, budgetMs: 60_000 }, (k) => 1000 + (k % 2) * 100);
    assert.equal(r.stoppedBy, "precision");
    assert.ok(medianRse(r.resultsS) <= 0.01, `rse ${medianRse(r.resultsS)}`);
    assert.ok(medianRse(r.resultsS.slice(0, -1)) > 0.01, "and not a repeat more than needed");
    assert.ok(r.resultsS.length > 3);
  });

  it("stops at the budget when the target is out of reach, saying so", () => {
    const started = performance.now();
    const r = run({ repeat: 2, targetRse: 1e-9, budgetMs: 50 }, (k) => 1000 + (k % 3) * 400);
    assert.equal(r.stoppedBy, "budget");
    assert.ok(performance.now() - started >= 50);
    assert.ok(medianRse(r.resultsS) > 1e-9);
  });

  it("medianRse: √(π/2)·s/√n over the median; none from one sample, zero for equal ones", () => {
    assert.equal(medianRse([1]), Infinity);
    assert.equal(medianRse([2, 2, 2]), 0);
    const s = [1, 2, 3, 4];
    const sd = Math.sqrt(((1.5 ** 2) * 2 + (0.5 ** 2) * 2) / 3);
    assert.ok(Math.abs(medianRse(s) - (Math.sqrt(Math.PI / 2) * sd) / 2 / 2.5) < 1e-12);
  });
});
