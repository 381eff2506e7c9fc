import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { LANE_BYTES_SLACK_MS, LaneByteCounts, MAX_LANE_BYTES_PER_S } from "./lane-bytes.ts";

describe("LaneByteCounts", () => {
  it("believes totals that grow within what a lane carries, and equal ones", () => {
    const counts = new LaneByteCounts();
    counts.begin(1, "s1", 0);
    assert.equal(counts.report(1, "s1", 1000, 5, 1000), undefined);
    assert.equal(counts.report(1, "s1", 1000, 5, 2000), undefined);
    assert.equal(counts.report(1, "s1", 1000 + MAX_LANE_BYTES_PER_S, 5, 2000), undefined, "one interval's slack: two reports delivered together");
  });

  it("refuses a total that goes down, in either direction", () => {
    const counts = new LaneByteCounts();
    counts.begin(1, "s1", 0);
    assert.equal(counts.report(1, "s1", 100, 100, 10), undefined);
    assert.match(counts.report(1, "s1", 99, 100, 20) ?? "", /to_board went down from 100 to 99/);
    assert.match(counts.report(1, "s1", 100, 0, 20) ?? "", /from_board went down from 100 to 0/);
  });

  it("refuses what is not a byte count: negative, fractional, NaN, infinite, past 2^53", () => {
    for (const bad of [-1, 0.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53]) {
      const counts = new LaneByteCounts();
      counts.begin(1, "s1", 0);
      assert.match(counts.report(1, "s1", bad, 0, 10) ?? "", /to_board .* is not a byte count/, String(bad));
      assert.match(counts.report(1, "s1", 0, bad, 10) ?? "", /from_board .* is not a byte count/, String(bad));
    }
  });

  it("refuses growth faster than any lane: the bound is the time since the last report, plus the slack", () => {
    const counts = new LaneByteCounts();
    counts.begin(1, "s1", 0);
    const most = (MAX_LANE_BYTES_PER_S * (2000 + LANE_BYTES_SLACK_MS)) / 1e3;
    assert.match(counts.report(1, "s1", most + 1, 0, 2000) ?? "", /grew by .* in 2000 ms/);
    assert.equal(counts.report(1, "s1", most, 0, 2000), undefined);
    assert.match(counts.report(1, "s1", most, 1e15, 2000) ?? "", /from_board grew by/);
  });

  it("refuses a session its worker was never given, one before its current, or a worker that is gone", () => {
    const counts = new LaneByteCounts();
    assert.match(counts.report(1, "s1", 0, 0, 0) ?? "", /not the session it was assigned last/);
    counts.begin(1, "s1", 0);
    counts.begin(1, "s2", 0);
    assert.match(counts.report(1, "s1", 0, 0, 0) ?? "", /not the session it was assigned last/);
    assert.equal(counts.report(1, "s2", 0, 0, 0), undefined);
    counts.forget(1);
    assert.match(counts.report(1, "s2", 0, 0, 0) ?? "", /not the session it was assigned last/);
  });

  it("keeps each worker's totals apart", () => {
    const counts = new LaneByteCounts();
    counts.begin(1, "s1", 0);
    counts.begin(2, "s2", 0);
    assert.equal(counts.report(1, "s1", 1000, 1000, 10), undefined);
    assert.equal(counts.report(2, "s2", 1, 1, 10), undefined);
    assert.match(counts.report(1, "s1", 1, 1, 20) ?? "", /went down/);
  });
});
