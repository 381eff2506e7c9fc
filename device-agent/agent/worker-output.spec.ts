/** What of a worker's output the agent's log shows: the watchdog's marker taken out, pieces gathered and bounded, a budget. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { LOG_BURST_BYTES, LOG_BYTES_PER_S, LOG_EXCERPT_CHARS, OutputBudget, PendingOutput, takeTimeoutMarker } from "./worker-output.ts";

describe("the watchdog's marker", () => {
  it("is taken out of the worker's stderr, and says what ran past its timeout", () => {
    assert.deepEqual(takeTimeoutMarker("tenant text\nKFARM-CALL-TIMEOUT call spin ran past its 400 ms timeout (the call's timeoutMs)\n"), {
      text: "tenant text",
      timeout: "call spin ran past its 400 ms timeout (the call's timeoutMs)",
    });
    assert.deepEqual(takeTimeoutMarker("\nKFARM-CALL-TIMEOUT call f ran past its 5 ms timeout\n"), { text: "", timeout: "call f ran past its 5 ms timeout" });
    assert.deepEqual(takeTimeoutMarker("no marker here\n"), { text: "no marker here\n" });
  });
});

describe("a worker's output in the log", () => {
  it("gathers pieces into one excerpt, without its trailing line end", () => {
    const p = new PendingOutput();
    assert.equal(p.take(), undefined);
    p.add("hello ", 6);
    p.add("world\n", 6);
    assert.equal(p.empty, false);
    assert.deepEqual(p.take(), { output: "hello world", bytes: 12, cut: 0 });
    assert.equal(p.empty, true);
    assert.equal(p.take(), undefined, "taken: it starts again");
  });

  it("shows nothing for blank pieces", () => {
    const p = new PendingOutput();
    p.add("\n", 1);
    p.add("  \n\t\r\n", 6);
    assert.equal(p.take(), undefined);
    p.add("\n\nafter blank lines\n", 20);
    assert.deepEqual(p.take(), { output: "\n\nafter blank lines", bytes: 20, cut: 0 }, "blank lines within visible text are text");
  });

  it("is bounded: the first LOG_EXCERPT_CHARS, and how many characters were left out", () => {
    const p = new PendingOutput();
    for (let i = 0; i < 100; i++) p.add("x".repeat(99) + "\n", 100);
    const e = p.take()!;
    assert.equal(e.output.length, LOG_EXCERPT_CHARS);
    assert.equal(e.bytes, 10_000);
    assert.equal(e.cut, 10_000 - LOG_EXCERPT_CHARS);
    const exact = new PendingOutput();
    exact.add("y".repeat(LOG_EXCERPT_CHARS) + "\n", LOG_EXCERPT_CHARS + 1);
    assert.deepEqual(exact.take(), { output: "y".repeat(LOG_EXCERPT_CHARS), bytes: LOG_EXCERPT_CHARS + 1, cut: 0 });
  });
});

describe("the log's budget for a worker's output", () => {
  it("lets a burst through, then a rate; counts what it drops and says so once per flood", () => {
    let now = 0;
    let floods = 0;
    const b = new OutputBudget(
      () => floods++,
      () => now,
    );
    assert.ok(b.take(LOG_BURST_BYTES - 100, 5000));
    assert.ok(!b.take(200, 7000));
    assert.ok(!b.take(200, 3000));
    assert.equal(floods, 1, "said once per flood");
    now += 1000; // a second's refill
    assert.ok(b.take(LOG_BYTES_PER_S, 1));
    assert.equal(b.dropped(), 10_000, "the next line that fits says how much output was left out");
    assert.equal(b.dropped(), 0);
    assert.ok(!b.take(LOG_BYTES_PER_S, 10));
    assert.equal(floods, 2, "a new flood is said again");
  });
});
