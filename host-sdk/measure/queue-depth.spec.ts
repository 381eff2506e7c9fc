/** The queue's depth ahead of the boards: at the start, and as Little's law sets it from what the batch has seen. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { adaptedQueueDepth, initialQueueDepth, percentile } from "./queue-depth.ts";

describe("queue depth", () => {
  it("starts with every compile slot plus one candidate per board slot", () => {
    assert.equal(initialQueueDepth(8, 4, 1), 12);
    assert.equal(initialQueueDepth(2, 3, 2), 8);
  });

  it("stays as it is until every board has measured once and four compiles have finished", () => {
    const base = { slots: 2, inFlight: 1, compileParallelism: 4 };
    assert.equal(adaptedQueueDepth({ ...base, boardSeconds: [1], compileSeconds: [1, 1, 1, 1] }), undefined, "one board of two measured");
    assert.equal(adaptedQueueDepth({ ...base, boardSeconds: [1, 1], compileSeconds: [1, 1, 1] }), undefined, "three compiles");
    assert.notEqual(adaptedQueueDepth({ ...base, boardSeconds: [1, 1], compileSeconds: [1, 1, 1, 1] }), undefined);
  });

  it("covers the slow compile at the boards' rate, with half again: candidates in flight = rate × time", () => {
    // 2 boards at 1 s a candidate: 2 per second; the slow compile (90th percentile) 0.5 s → 1.5 × 2 × 0.5 = 1.5, rounded up: 2 beyond the 2 board slots.
    assert.equal(adaptedQueueDepth({ slots: 2, inFlight: 1, compileParallelism: 16, boardSeconds: [1, 1], compileSeconds: [0.1, 0.2, 0.3, 0.5] }), 4);
    // The boards' median, not their mean: one slow candidate does not make the boards look slow.
    assert.equal(adaptedQueueDepth({ slots: 2, inFlight: 1, compileParallelism: 16, boardSeconds: [1, 1, 100], compileSeconds: [0.5, 0.5, 0.5, 0.5] }), 4);
  });

  it("goes no deeper than every compile slot plus two per board slot", () => {
    // 4 boards at 10 ms a candidate, 10 s compiles: Little's law asks for 6008; the ceiling is 4 + 2 × 8.
    assert.equal(
      adaptedQueueDepth({ slots: 4, inFlight: 2, compileParallelism: 4, boardSeconds: [0.01, 0.01, 0.01, 0.01], compileSeconds: [10, 10, 10, 10] }),
      20,
    );
  });

  it("takes boards that report no time as a millisecond, not as infinitely fast", () => {
    assert.equal(adaptedQueueDepth({ slots: 1, inFlight: 1, compileParallelism: 100, boardSeconds: [0], compileSeconds: [0.01, 0.01, 0.01, 0.01] }), 1 + 15);
  });

  it("percentile: the sample at the quantile, without interpolation", () => {
    assert.equal(percentile([5, 1, 3, 2, 4], 0.5), 3);
    assert.equal(percentile([1, 2, 3, 4], 0.5), 3, "the upper of the middle two");
    assert.equal(percentile([1, 2, 3, 4], 0.9), 4);
    assert.equal(percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.9), 10);
    assert.equal(percentile([7], 0.9), 7);
  });
});
