/** Backoff's bounds: the cap that doubles to its ceiling, the jitter under it, and an abort that ends the wait. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { BACKOFF_FIRST_MS, BACKOFF_MAX_MS, backoff, backoffCapMs } from "./backoff.ts";

describe("backoff", () => {
  it("caps the first wait at 250 ms and doubles per failure up to 8 s", () => {
    assert.equal(BACKOFF_FIRST_MS, 250);
    assert.equal(BACKOFF_MAX_MS, 8000);
    assert.deepEqual([0, 1, 2, 3, 4, 5, 6, 30].map(backoffCapMs), [250, 500, 1000, 2000, 4000, 8000, 8000, 8000]);
  });

  it("waits a uniform fraction of the cap: the random draw scales it", async () => {
    const t0 = performance.now();
    await backoff(0, undefined, () => 0);
    const none = performance.now() - t0;
    assert.ok(none < 100, `a draw of 0 waits not at all (${none.toFixed(0)} ms)`);
    const t1 = performance.now();
    await backoff(0, undefined, () => 0.6);
    const most = performance.now() - t1;
    assert.ok(most >= 140 && most < 1000, `a draw of 0.6 waits 0.6 of 250 ms (${most.toFixed(0)} ms)`);
  });

  it("asks for one draw per wait, and never waits past the cap", async () => {
    let draws = 0;
    const t0 = performance.now();
    await backoff(1, undefined, () => {
      draws++;
      return 0.999;
    });
    const waited = performance.now() - t0;
    assert.equal(draws, 1);
    assert.ok(waited < 500 + 250, `at most the 500 ms cap, with room for a loaded machine (${waited.toFixed(0)} ms)`);
  });

  it("ends at once when the batch's signal aborts, and leaves no listener behind", async () => {
    const ac = new AbortController();
    const t0 = performance.now();
    const waiting = backoff(10, ac.signal, () => 0.999);
    setTimeout(() => ac.abort(), 20);
    await waiting;
    const waited = performance.now() - t0;
    assert.ok(waited < 2000, `an 8 s wait cut short by the abort (${waited.toFixed(0)} ms)`);
    const ac2 = new AbortController();
    let removed = 0;
    const remove = ac2.signal.removeEventListener.bind(ac2.signal);
    ac2.signal.removeEventListener = (...a: Parameters<typeof remove>) => {
      removed++;
      remove(...a);
    };
    await backoff(0, ac2.signal, () => 0);
    assert.equal(removed, 1, "the timer's end takes its abort listener away");
  });
});
