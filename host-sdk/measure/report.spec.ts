/** The batch's report from its boards' clocks and counts. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { buildReport, type ReportInput } from "./report.ts";

const idle = (tail = 0) => ({ compile: 0, host: 0, transfer: 0, session: 0, tail });

describe("buildReport", () => {
  const input: ReportInput = {
    seconds: 10,
    loops: [
      { boards: ["b1"], candidates: 20, clock: { busySeconds: 8, idle: idle(2) } },
      { boards: ["b2", "b3"], candidates: 10, clock: { busySeconds: 4, idle: idle(6) } },
    ],
    recorded: 30,
    reused: 5,
    compileSeconds: [3, 1, 4, 2],
    compileParallelism: 8,
    queueDepth: 12,
    inFlight: 1,
  };

  it("gives each board its busy fraction and rate, and the batch their mean", () => {
    const r = buildReport(input);
    assert.deepEqual(
      r.boards.map((b) => [b.boards, b.candidates, b.busy, b.candidatesPerSecond, b.idle.tail]),
      [
        [["b1"], 20, 0.8, 2, 2],
        [["b2", "b3"], 10, 0.4, 1, 6],
      ],
    );
    assert.ok(Math.abs(r.busy - 0.6) < 1e-12);
    assert.equal(r.candidates, 30);
    assert.equal(r.reused, 5);
    assert.equal(r.candidatesPerSecond, 3);
    assert.deepEqual([r.compileParallelism, r.queueDepth, r.inFlightPerBoard], [8, 12, 1]);
  });

  it("summarises the compiles: count, upper median, slowest", () => {
    assert.deepEqual(buildReport(input).compiles, { count: 4, medianSeconds: 3, maxSeconds: 4 });
    assert.deepEqual(buildReport({ ...input, compileSeconds: [] }).compiles, { count: 0, medianSeconds: 0, maxSeconds: 0 });
  });

  it("copies each clock's idle time: the report does not change as a kept clock goes on", () => {
    const clock = { busySeconds: 1, idle: idle(2) };
    const r = buildReport({ ...input, loops: [{ boards: ["b1"], candidates: 1, clock }] });
    clock.idle.tail = 99;
    assert.equal(r.boards[0]!.idle.tail, 2);
  });

  it("reports zero rates for a batch of no time or no boards, never NaN", () => {
    const r = buildReport({ ...input, seconds: 0 });
    assert.deepEqual([r.candidatesPerSecond, r.busy, r.boards[0]!.busy, r.boards[0]!.candidatesPerSecond], [0, 0, 0, 0]);
    assert.equal(buildReport({ ...input, loops: [] }).busy, 0);
  });
});
