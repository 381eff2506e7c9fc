/**
 * LongTimer on node:test's mock clock: a delay past Node's 2^31 − 1 ms
 * fires when it is due, not at once, and a cleared one never fires.
 */
import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, it, mock } from "node:test";
import { LongTimer, MAX_TIMER_MS } from "./long-timer.ts";

describe("LongTimer", () => {
  beforeEach(() => mock.timers.enable({ apis: ["setTimeout"] }));
  afterEach(() => mock.timers.reset());

  it("fires a delay within Node's limit when it is due", () => {
    let fired = 0;
    new LongTimer(300, () => fired++);
    mock.timers.tick(299);
    assert.equal(fired, 0);
    mock.timers.tick(1);
    assert.equal(fired, 1);
  });

  it("fires a delay past 2^31 − 1 ms when it is due, once, not at once", () => {
    let fired = 0;
    new LongTimer(3 * MAX_TIMER_MS + 5, () => fired++);
    mock.timers.tick(1);
    assert.equal(fired, 0, "Node's own setTimeout would have fired it now");
    // The mock clock runs what falls due at the end of each tick: one tick per piece of the wait.
    mock.timers.tick(MAX_TIMER_MS - 1);
    mock.timers.tick(MAX_TIMER_MS);
    mock.timers.tick(MAX_TIMER_MS);
    mock.timers.tick(4);
    assert.equal(fired, 0, "1 ms before it is due");
    mock.timers.tick(1);
    assert.equal(fired, 1);
    mock.timers.tick(MAX_TIMER_MS);
    assert.equal(fired, 1);
  });

  it("never fires once cleared, in any of its pieces", () => {
    let fired = 0;
    const t = new LongTimer(2 * MAX_TIMER_MS, () => fired++);
    mock.timers.tick(MAX_TIMER_MS + 1);
    t.clear();
    mock.timers.tick(4 * MAX_TIMER_MS);
    assert.equal(fired, 0);
  });
});
