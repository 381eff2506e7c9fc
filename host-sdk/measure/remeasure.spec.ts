/** The `remeasure` option: off, its defaults, a caller's own test, and the mistakes refused up front. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { measuredWhileThrottled, resolveRemeasure } from "./remeasure.ts";
import { DEFAULT_REMEASURE_TIMES, type MeasureResult } from "./types.ts";

const result = (extra: Partial<MeasureResult> = {}): MeasureResult => ({ index: 0, id: "c0", outcome: "OK", attempts: 1, ...extra });

describe("resolveRemeasure", () => {
  it("is off unless asked", () => {
    assert.equal(resolveRemeasure(undefined), undefined);
    assert.equal(resolveRemeasure(false), undefined);
  });

  it("true: measure again what was measured while throttled, twice at most", () => {
    const r = resolveRemeasure(true)!;
    assert.equal(r.times, DEFAULT_REMEASURE_TIMES);
    assert.equal(DEFAULT_REMEASURE_TIMES, 2);
    assert.equal(r.when, measuredWhileThrottled);
    assert.equal(r.when(result({ throttled: true })), true);
    assert.equal(r.when(result({ throttled: false })), false);
    assert.equal(r.when(result()), false, "a board that does not say is not throttled");
  });

  it("keeps the caller's test and count, and fills in what it leaves out", () => {
    const when = (x: MeasureResult) => (x.timing?.rse ?? 0) > 0.05;
    assert.deepEqual(resolveRemeasure({ when, times: 5 }), { when, times: 5 });
    assert.deepEqual(resolveRemeasure({ times: 0 }), { when: measuredWhileThrottled, times: 0 });
    assert.deepEqual(resolveRemeasure({ when }), { when, times: DEFAULT_REMEASURE_TIMES });
  });

  it("refuses a count that is not a whole number ≥ 0, and a test that is not a function", () => {
    assert.throws(
      () => resolveRemeasure({ times: -1 }),
      /remeasure times must be an integer in \[0, 4294967295\] \(measure's remeasure\.times: re-measurements at most per flagged candidate\), got -1/,
    );
    assert.throws(() => resolveRemeasure({ times: 1.5 }), /remeasure times must be an integer in \[0, 4294967295\] .*, got 1\.5/);
    assert.throws(() => resolveRemeasure({ when: "throttled" as never }), /remeasure\.when must be a function of a result/);
  });
});
