/** How many boards a batch uses, from a tracker's list of boards (a plain object standing in for the client). */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FarmError } from "../../protos/index.ts";
import { boardCount, type BoardLister } from "./board-count.ts";

type Board = { key: string; labels: Record<string, string> };

/** A tracker whose answers to summary() are `answers` in order (an Error: that failure), the last repeated. */
function tracker(...answers: (Board[] | Error)[]): BoardLister & { calls: number } {
  const t = {
    calls: 0,
    summary() {
      const a = answers[Math.min(t.calls++, answers.length - 1)]!;
      return a instanceof Error ? Promise.reject(a) : Promise.resolve({ boards: a });
    },
  };
  return t as unknown as BoardLister & { calls: number };
}

const cpu = (labels: Record<string, string> = {}): Board => ({ key: "cpu", labels });

describe("boardCount", () => {
  it("counts the key's boards whose labels include the batch's, at most `boards` and one per candidate", async () => {
    const farm = [cpu({ rack: "a" }), cpu({ rack: "a" }), cpu({ rack: "b" }), { key: "gpu", labels: {} }];
    assert.equal(await boardCount(tracker(farm), { key: "cpu" }, undefined, 0), 3);
    assert.equal(await boardCount(tracker(farm), { key: "cpu", labels: { rack: "a" } }, undefined, 0), 2);
    assert.equal(await boardCount(tracker(farm), { key: "cpu", boards: 1 }, undefined, 0), 1);
    assert.equal(await boardCount(tracker(farm), { key: "cpu" }, 2, 0), 2);
    assert.equal(await boardCount(tracker(farm), { key: "cpu" }, 0, 0), 1, "never fewer than one");
  });

  it("counts sessions kept from the last batch once, and keeps them when the tracker does not answer", async () => {
    assert.equal(await boardCount(tracker([cpu(), cpu(), cpu()]), { key: "cpu" }, undefined, 2), 3);
    assert.equal(await boardCount(tracker([cpu()]), { key: "cpu" }, undefined, 2), 2, "their boards may be between heartbeats");
    assert.equal(await boardCount(tracker(new FarmError("UNAVAILABLE", "tracker away")), { key: "cpu" }, undefined, 2), 2);
  });

  it("refuses a key no board serves once `deadlineMs` has passed, naming the keys the farm serves", async () => {
    await assert.rejects(
      boardCount(
        tracker([
          { key: "gpu", labels: {} },
          { key: "arm", labels: {} },
        ]),
        { key: "cpu", labels: { rack: "a" }, deadlineMs: 0 },
        undefined,
        0,
      ),
      (e: FarmError) => {
        assert.equal(e.code, "NO_BOARD");
        assert.match(e.message, /no board serves key "cpu" with labels \{"rack":"a"\} \(waited 0 ms for one to attach\); the farm serves keys arm, gpu/);
        return true;
      },
    );
  });

  it("waits for a board to attach", async () => {
    const t = tracker([], [cpu()]);
    assert.equal(await boardCount(t, { key: "cpu", deadlineMs: 5_000 }, undefined, 0), 1);
    assert.equal(t.calls, 2);
  });

  it("stops at once on a refusal no waiting heals", async () => {
    // With no deadline to wait out: were it taken for an outage, the count would go on with one board instead.
    await assert.rejects(boardCount(tracker(new FarmError("UNAUTHENTICATED", "bad token")), { key: "cpu", infraDeadlineMs: 0 }, undefined, 0), /bad token/);
  });

  it("waits an outage out, then goes on with one board's worth of sessions (or `boards`) past `infraDeadlineMs`", async () => {
    const away = new FarmError("UNAVAILABLE", "tracker away");
    const t = tracker(away, [cpu(), cpu()]);
    assert.equal(await boardCount(t, { key: "cpu" }, undefined, 0), 2, "back within the deadline: its boards");
    assert.equal(await boardCount(tracker(away), { key: "cpu", infraDeadlineMs: 0 }, undefined, 0), 1);
    assert.equal(await boardCount(tracker(away), { key: "cpu", infraDeadlineMs: 0, boards: 3 }, undefined, 0), 3);
  });
});
