/** Canary drift: the timing history and baseline, and the health transitions they drive. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FarmError } from "../protos/index.ts";
import { emptyState, parseTrackerState } from "./board-memory.ts";
import { CANARY_BASELINE_RUNS, CANARY_RECENT_RUNS, CANARY_TIMINGS_MAX, CanaryDrift, DEFAULT_MAX_CANARY_DRIFT, formatNs } from "./canary-drift.ts";
import { BoardHealth, RESTORE_AFTER, type HealthPolicy } from "./health.ts";
import { resolveTrackerOptions } from "./options.ts";

const BOUND = DEFAULT_MAX_CANARY_DRIFT;

describe("canary drift", () => {
  it(`learns the baseline as the median of the first ${CANARY_BASELINE_RUNS} timed runs, and judges nothing before`, () => {
    const d = new CanaryDrift();
    const runs = [100, 300, 110, 90, 105];
    for (const ns of runs.slice(0, -1)) assert.deepEqual(d.record(ns, BOUND), { kind: "learning" });
    assert.equal(d.baselineNs, 0);
    assert.equal(d.ratio, 0, "no ratio while learning");
    assert.equal(d.baselineRuns, CANARY_BASELINE_RUNS - 1);
    const v = d.record(runs.at(-1)!, BOUND);
    assert.equal(d.baselineNs, 105, "the median, not the mean (300 is a disturbed run)");
    assert.equal(v.kind, "within");
    assert.equal(d.recentNs, 105);
  });

  it(`judges the median of the last ${CANARY_RECENT_RUNS} runs: one slow run is not a drift, a sustained one is`, () => {
    const d = new CanaryDrift();
    for (let i = 0; i < CANARY_BASELINE_RUNS; i++) d.record(100, BOUND);
    assert.equal(d.record(1000, BOUND).kind, "within", "one noisy run moves nothing");
    assert.equal(d.record(130, BOUND).kind, "within", "the median of 100, 100, 100, 1000, 130 is 100");
    assert.equal(d.record(130, BOUND).kind, "slower", "100, 100, 1000, 130, 130: most recent runs are slow");
  });

  it("is slower once the recent median is beyond the bound, and within again when it comes back", () => {
    const d = new CanaryDrift();
    for (let i = 0; i < CANARY_BASELINE_RUNS; i++) d.record(100, BOUND);
    const verdicts = [142, 142, 142].map((ns) => d.record(ns, BOUND));
    assert.deepEqual(
      verdicts.map((v) => v.kind),
      ["within", "within", "slower"],
      "the third slow run makes the median of five slow",
    );
    assert.deepEqual(verdicts[2], { kind: "slower", ratio: 1.42, recentNs: 142, baselineNs: 100 });
    assert.ok(d.slow);
    assert.equal(d.ratio, 1.42);
    const back = [100, 100, 100].map((ns) => d.record(ns, BOUND));
    assert.deepEqual(
      back.map((v) => v.kind),
      ["slower", "slower", "within"],
    );
    assert.ok(!d.slow);
  });

  it("faster than the baseline is never slow, and leaves the baseline where it is", () => {
    const d = new CanaryDrift();
    for (let i = 0; i < CANARY_BASELINE_RUNS; i++) d.record(100, BOUND);
    for (let i = 0; i < 10; i++) assert.equal(d.record(40, BOUND).kind, "within");
    assert.equal(d.baselineNs, 100);
    assert.equal(d.ratio, 0.4);
  });

  it("with a bound of 0 keeps and shows the times but never says slower", () => {
    const d = new CanaryDrift();
    for (let i = 0; i < CANARY_BASELINE_RUNS; i++) d.record(100, 0);
    for (let i = 0; i < CANARY_RECENT_RUNS; i++) assert.equal(d.record(1000, 0).kind, "within");
    assert.equal(d.ratio, 10);
  });

  it(`keeps the last ${CANARY_TIMINGS_MAX} runs; a reset learns the baseline again from new runs only`, () => {
    const d = new CanaryDrift();
    for (let i = 0; i < CANARY_TIMINGS_MAX + 7; i++) d.record(100 + i, BOUND, 1000 + i);
    assert.equal(d.timings.length, CANARY_TIMINGS_MAX);
    assert.deepEqual(d.timings[0], { at: 1007, ns: 107 });
    d.reset();
    assert.equal(d.baselineNs, 0);
    assert.equal(d.timings.length, CANARY_TIMINGS_MAX, "the history stays");
    for (let i = 0; i < CANARY_BASELINE_RUNS; i++) d.record(500, BOUND);
    assert.equal(d.baselineNs, 500);
    assert.equal(d.ratio, 1);
  });

  it("a snapshot restores to the same baseline, history and verdict", () => {
    const d = new CanaryDrift();
    for (let i = 0; i < CANARY_BASELINE_RUNS; i++) d.record(100, BOUND);
    for (let i = 0; i < 3; i++) d.record(200, BOUND);
    const back = CanaryDrift.restore(JSON.parse(JSON.stringify(d.snapshot())));
    assert.deepEqual(back.snapshot(), d.snapshot());
    assert.ok(back.slow);
    assert.equal(back.record(200, BOUND).kind, "slower");
  });

  it("writes times for people", () => {
    assert.deepEqual([812, 999.6, 12_700, 18_149, 123_456, 1_234_567, 2.5e9, 0.5].map(formatNs), [
      "812 ns",
      "1.00 µs",
      "12.7 µs",
      "18.1 µs",
      "123 µs",
      "1.23 ms",
      "2.50 s",
      "0.500 ns",
    ]);
  });
});

describe("board health and canary drift", () => {
  const policy: HealthPolicy = { maxCanaryDrift: BOUND };
  let at = 0;
  const timed = (ns: number) => ({ kind: "canary_passed" as const, detail: "vadd of 64 floats exact", at: ++at, kernelNs: ns });
  /** A board whose baseline is 10 µs. */
  function learned(): BoardHealth {
    const h = new BoardHealth();
    for (let i = 0; i < CANARY_BASELINE_RUNS; i++) assert.equal(h.apply(timed(10_000), policy), undefined);
    assert.equal(h.canary.baselineNs, 10_000);
    return h;
  }
  /** Slow runs until the median of the recent ones is slow too; returns the transition. */
  function slowDown(h: BoardHealth, ns: number) {
    let t;
    for (let i = 0; i < Math.ceil(CANARY_RECENT_RUNS / 2); i++) t = h.apply(timed(ns), policy);
    return t;
  }

  it("a canary time that is not a time (NaN, negative, infinite) is no timing: the pass counts, the history and baseline do not move", () => {
    const h = learned();
    const before = h.canary.timings.length;
    for (const ns of [NaN, -5, Infinity]) assert.equal(h.apply(timed(ns), policy), undefined);
    assert.equal(h.canary.timings.length, before);
    assert.equal(h.canary.baselineNs, 10_000);
    assert.equal(h.state, "healthy");
  });

  it("a canary that drifts slower makes the board suspect (still grantable), naming the figures", () => {
    const h = learned();
    assert.deepEqual(slowDown(h, 14_200), { from: "healthy", to: "suspect", reason: "canary 1.42× slower than its baseline: 14.2 µs against 10.0 µs" });
    assert.ok(h.grantable);
    assert.equal(h.lastError, "", "a slow canary is no failure");
    assert.equal(h.lastCanary, "passed: vadd of 64 floats exact");
  });

  it("a suspect board that stays slow takes the new figures without a transition; back within the bound it is healthy", () => {
    const h = learned();
    slowDown(h, 14_200);
    for (let i = 0; i < 3; i++) assert.equal(h.apply(timed(20_000), policy), undefined);
    assert.equal(h.reason, "canary 2.00× slower than its baseline: 20.0 µs against 10.0 µs");
    assert.equal(h.history.length, 1);
    let t;
    for (let i = 0; i < CANARY_RECENT_RUNS && !t; i++) t = h.apply(timed(10_100), policy);
    assert.deepEqual(t, { from: "suspect", to: "healthy", reason: "canary back within 1.25× of its baseline: 10.1 µs against 10.0 µs" });
  });

  it("faster than its baseline stays healthy", () => {
    const h = learned();
    for (let i = 0; i < 10; i++) assert.equal(h.apply(timed(3_000), policy), undefined);
    assert.equal(h.state, "healthy");
    assert.equal(h.canary.ratio, 0.3);
  });

  it("slow passes never count toward a quarantine; a failure of a slow board says so", () => {
    const h = learned();
    slowDown(h, 30_000);
    for (let i = 0; i < 5; i++) h.apply(timed(30_000), policy);
    assert.equal(h.state, "suspect");
    assert.equal(
      h.apply({ kind: "canary_failed", reason: "vadd[3] = 10.5, expected 9.5" }, policy),
      undefined,
      "the first failure after passes: still suspect",
    );
    assert.equal(h.reason, "canary failed: vadd[3] = 10.5, expected 9.5");
  });

  it(`an automatic quarantine lifts after ${RESTORE_AFTER} passes to suspect, not healthy, when they are slow`, () => {
    const h = learned();
    for (let i = 0; i < CANARY_RECENT_RUNS; i++) h.apply(timed(30_000), policy);
    h.apply({ kind: "canary_failed", reason: "wrong" }, policy);
    h.apply({ kind: "canary_failed", reason: "wrong" }, policy);
    assert.equal(h.state, "quarantined");
    assert.equal(h.apply(timed(30_000), policy), undefined);
    assert.deepEqual(h.apply(timed(30_000), policy), {
      from: "quarantined",
      to: "suspect",
      reason: `${RESTORE_AFTER} canaries passed in a row, but canary 3.00× slower than its baseline: 30.0 µs against 10.0 µs`,
    });
  });

  it("an operator's quarantine holds whatever the canary's speed", () => {
    const h = learned();
    h.apply({ kind: "operator_quarantine", by: "alice" }, policy);
    for (let i = 0; i < CANARY_RECENT_RUNS; i++) assert.equal(h.apply(timed(30_000), policy), undefined);
    assert.equal(h.reason, "quarantined by alice");
  });

  it("an operator's restore accepts the board's speed as it is now: the baseline is learned again", () => {
    const h = learned();
    slowDown(h, 30_000);
    assert.deepEqual(h.apply({ kind: "operator_restore", by: "bob" }, policy), { from: "suspect", to: "healthy", reason: "restored by bob" });
    for (let i = 0; i < CANARY_BASELINE_RUNS + CANARY_RECENT_RUNS; i++) assert.equal(h.apply(timed(30_000), policy), undefined);
    assert.equal(h.canary.baselineNs, 30_000);
    assert.equal(h.state, "healthy");
  });

  it("with maxCanaryDrift 0 the times are kept but never make a board suspect", () => {
    const h = new BoardHealth();
    for (let i = 0; i < CANARY_BASELINE_RUNS + CANARY_RECENT_RUNS; i++)
      assert.equal(h.apply(timed(i < CANARY_BASELINE_RUNS ? 10_000 : 90_000), { maxCanaryDrift: 0 }), undefined);
    assert.equal(h.canary.ratio, 9);
  });

  it("untimed passes (older agents, TVM probes) and repeated canaries record no time", () => {
    const h = new BoardHealth();
    h.apply({ kind: "canary_passed", detail: "probe", at: ++at }, policy);
    const repeat = timed(10_000);
    h.apply(repeat, policy);
    h.apply(repeat, policy);
    assert.equal(h.canary.timings.length, 1);
  });

  it("the baseline and a slow verdict survive a snapshot (the tracker's state file), and a file without them loads", () => {
    const h = learned();
    slowDown(h, 14_200);
    const back = BoardHealth.restore(JSON.parse(JSON.stringify(h.snapshot())));
    assert.equal(back.canary.baselineNs, 10_000);
    assert.equal(back.state, "suspect");
    let t;
    for (let i = 0; i < CANARY_RECENT_RUNS && !t; i++) t = back.apply(timed(10_000), policy);
    assert.match(t!.reason, /^canary back within 1\.25× of its baseline/);

    const memo = { key: "cpu", kind: "cpu", seenAt: 1, drain: "", health: h.snapshot() };
    const parsed = parseTrackerState(JSON.parse(JSON.stringify({ boards: { "a/b": memo } })));
    assert.deepEqual(parsed.boards["a/b"]!.health.canary, h.snapshot().canary);
    const { canary: _, ...older } = h.snapshot();
    const old = parseTrackerState(JSON.parse(JSON.stringify({ boards: { "a/b": { ...memo, health: older } } })));
    assert.deepEqual(old.boards["a/b"]!.health.canary, new CanaryDrift().snapshot(), "a file from before canary timings: nothing learned");
    assert.throws(
      () => parseTrackerState({ boards: { "a/b": { ...memo, health: { ...older, canary: { timings: [], baselineNs: "x" } } } } }),
      /boards\["a\/b"\]\.health\.canary\.baselineNs must be a number/,
    );
    assert.deepEqual(emptyState(), { boards: {} });
  });
});

describe("the tracker's maxCanaryDrift option", () => {
  it(`defaults to ${DEFAULT_MAX_CANARY_DRIFT}, takes 0 (judge nothing) or a bound above 1`, () => {
    assert.equal(resolveTrackerOptions({}).maxCanaryDrift, DEFAULT_MAX_CANARY_DRIFT);
    assert.equal(resolveTrackerOptions({ maxCanaryDrift: 0 }).maxCanaryDrift, 0);
    assert.equal(resolveTrackerOptions({ maxCanaryDrift: 2 }).maxCanaryDrift, 2);
  });

  it("refuses a bound at or under 1, negative or not finite, with INVALID_ARGUMENT naming the option", () => {
    for (const bad of [1, 0.8, -1, NaN, Infinity]) {
      assert.throws(
        () => resolveTrackerOptions({ maxCanaryDrift: bad }),
        (e: unknown) => e instanceof FarmError && e.code === "INVALID_ARGUMENT" && e.message.includes("maxCanaryDrift") && e.message.includes(String(bad)),
        `maxCanaryDrift ${bad}`,
      );
    }
  });
});
