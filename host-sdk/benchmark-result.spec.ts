/** BenchmarkResult: TVM's summary statistics over the repeats. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { BenchmarkResult } from "./benchmark-result.ts";

function close(actual: number, expected: number, what: string): void {
  assert.ok(Math.abs(actual - expected) <= 1e-12 * Math.max(1, Math.abs(expected)), `${what}: ${actual} ≠ ${expected}`);
}

describe("BenchmarkResult", () => {
  it("odd count: mean, median (middle), min, max, population std", () => {
    const r = new BenchmarkResult([5, 1, 4, 2, 3], 10);
    close(r.mean, 3, "mean");
    assert.equal(r.median, 3);
    assert.equal(r.min, 1);
    assert.equal(r.max, 5);
    close(r.std, Math.sqrt(2), "population std (divides by n, not n-1)");
    assert.equal(r.number, 10);
    assert.deepEqual(r.results, [5, 1, 4, 2, 3], "results keep their measured order");
  });

  it("even count: median is the mean of the two middle values", () => {
    const r = new BenchmarkResult([0.004, 0.001, 0.003, 0.01], 1);
    close(r.median, 0.0035, "median");
    close(r.mean, 0.0045, "mean");
    assert.equal(r.min, 0.001);
    assert.equal(r.max, 0.01);
    const mean = 0.0045;
    const expectedStd = Math.sqrt([0.004, 0.001, 0.003, 0.01].reduce((a, x) => a + (x - mean) ** 2, 0) / 4);
    close(r.std, expectedStd, "std");
  });

  it("a single result: everything equals it, std 0", () => {
    const r = new BenchmarkResult([2.5e-6], 100);
    assert.deepEqual([r.mean, r.median, r.min, r.max, r.std], [2.5e-6, 2.5e-6, 2.5e-6, 2.5e-6, 0]);
  });

  it("two results: median is their mean; std is half their distance", () => {
    const r = new BenchmarkResult([1, 3], 1);
    assert.equal(r.median, 2);
    assert.equal(r.std, 1);
  });

  it("sorts numerically, not as strings", () => {
    const r = new BenchmarkResult([10, 9, 100, 2], 1);
    assert.equal(r.min, 2);
    assert.equal(r.max, 100);
    assert.equal(r.median, 9.5);
  });

  it("no results: every statistic is NaN", () => {
    const r = new BenchmarkResult([], 1);
    for (const v of [r.mean, r.median, r.min, r.max, r.std]) assert.ok(Number.isNaN(v));
  });

  it("prints TVM's summary in milliseconds", () => {
    const r = new BenchmarkResult([0.001, 0.003], 1, { clock: "boost" });
    const text = r.toString();
    assert.match(text, /^Execution time summary:\n mean \(ms\)\s+median \(ms\)\s+max \(ms\)\s+min \(ms\)\s+std \(ms\)/);
    const numbers = text.split("\n")[2]!.trim().split(/\s+/).map(Number);
    assert.deepEqual(numbers, [2, 2, 3, 1, 1]);
    assert.deepEqual(r.conditions, { clock: "boost" });
  });

  it("says whether the board timed while throttled, where it says", () => {
    assert.equal(new BenchmarkResult([1], 1, { throttled: "yes: sw power cap" }).throttled, true);
    assert.equal(new BenchmarkResult([1], 1, { throttled: "no" }).throttled, false);
    assert.equal(new BenchmarkResult([1], 1, { throttled: "unknown: no NVML on this host" }).throttled, undefined);
    assert.equal(new BenchmarkResult([1], 1, { kind: "cpu" }).throttled, undefined);
  });
});
