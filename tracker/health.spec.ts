/** The board health state machine, transition by transition. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { BoardHealth, HEALTH_HISTORY_MAX, QUARANTINE_AFTER, RESTORE_AFTER } from "./health.ts";

const fail = (reason = "sum was 3, expected 4") => ({ kind: "canary_failed" as const, reason });
const pass = { kind: "canary_passed" as const, detail: "vadd of 64 floats exact" };

describe("board health", () => {
  it("starts healthy and grantable; passes keep it so, with no transition", () => {
    const h = new BoardHealth();
    assert.equal(h.state, "healthy");
    assert.ok(h.grantable);
    assert.equal(h.apply(pass), undefined);
  });

  it("remembers the last canary's outcome", () => {
    const h = new BoardHealth();
    assert.equal(h.lastCanary, "");
    h.apply(pass);
    assert.equal(h.lastCanary, "passed: vadd of 64 floats exact");
    assert.ok(h.lastCanaryAt > 0);
    h.apply(fail("vadd[3] = 7, expected 6"));
    assert.equal(h.lastCanary, "failed: vadd[3] = 7, expected 6");
  });

  it("one failure makes it suspect (still grantable), a pass makes it healthy again", () => {
    const h = new BoardHealth();
    assert.deepEqual(h.apply(fail()), { from: "healthy", to: "suspect", reason: "canary failed: sum was 3, expected 4" });
    assert.ok(h.grantable);
    assert.deepEqual(h.apply(pass), { from: "suspect", to: "healthy", reason: "canary passed" });
    assert.equal(h.lastError, "canary failed: sum was 3, expected 4", "the last error stays visible");
  });

  it(`${QUARANTINE_AFTER} failures in a row quarantine it; infrastructure errors count too`, () => {
    const h = new BoardHealth();
    h.apply({ kind: "infra_error", reason: "worker died with SIGSEGV" });
    const t = h.apply(fail("wrong answer"));
    assert.equal(t?.to, "quarantined");
    assert.match(t!.reason, /2 failures in a row, the last: canary failed: wrong answer/);
    assert.ok(!h.grantable);
    assert.equal(h.apply(fail()), undefined, "more failures change nothing");
  });

  it(`an automatic quarantine lifts after ${RESTORE_AFTER} passes in a row, not fewer, and a failure resets the count`, () => {
    const h = new BoardHealth();
    h.apply(fail());
    h.apply(fail());
    assert.equal(h.apply(pass), undefined);
    h.apply(fail());
    assert.equal(h.apply(pass), undefined, "the failure reset the passes");
    assert.deepEqual(h.apply(pass), { from: "quarantined", to: "healthy", reason: `${RESTORE_AFTER} canaries passed in a row` });
    assert.ok(h.grantable);
  });

  it("an operator's quarantine holds against passing canaries until a restore", () => {
    const h = new BoardHealth();
    assert.deepEqual(h.apply({ kind: "operator_quarantine", by: "alice" }), { from: "healthy", to: "quarantined", reason: "quarantined by alice" });
    for (let i = 0; i < 5; i++) assert.equal(h.apply(pass), undefined);
    assert.ok(!h.grantable);
    assert.deepEqual(h.apply({ kind: "operator_restore", by: "bob" }), { from: "quarantined", to: "healthy", reason: "restored by bob" });
    assert.equal(h.apply({ kind: "operator_restore", by: "bob" }), undefined, "restoring a healthy board is no transition");
  });

  it("a restore clears the failure count: one new failure is only suspect", () => {
    const h = new BoardHealth();
    h.apply(fail());
    h.apply({ kind: "operator_restore", by: "ops" });
    assert.equal(h.apply(fail())?.to, "suspect");
  });

  it(`keeps each transition, with its time and reason, up to the last ${HEALTH_HISTORY_MAX}`, () => {
    const h = new BoardHealth();
    const t0 = Date.now();
    h.apply(fail());
    h.apply({ kind: "operator_quarantine", by: "alice", note: "fan failing" });
    assert.deepEqual(
      h.history.map(({ from, to, reason }) => ({ from, to, reason })),
      [
        { from: "healthy", to: "suspect", reason: "canary failed: sum was 3, expected 4" },
        { from: "suspect", to: "quarantined", reason: "quarantined by alice: fan failing" },
      ],
    );
    assert.ok(h.history.every((c) => c.at >= t0));
    for (let i = 0; i < HEALTH_HISTORY_MAX; i++) {
      h.apply({ kind: "operator_restore", by: "ops" });
      h.apply(fail(`round ${i}`));
    }
    assert.equal(h.history.length, HEALTH_HISTORY_MAX);
    assert.equal(h.history.at(-1)!.reason, `canary failed: round ${HEALTH_HISTORY_MAX - 1}`);
  });

  it("a snapshot restores to a machine that decides the same: counters, an operator's hold, the history", () => {
    const held = new BoardHealth();
    held.apply({ kind: "operator_quarantine", by: "alice" });
    const back = BoardHealth.restore(JSON.parse(JSON.stringify(held.snapshot())));
    for (let i = 0; i < 3; i++) assert.equal(back.apply(pass), undefined, "still held");
    assert.equal(back.reason, "quarantined by alice");
    assert.deepEqual(back.history, held.history);

    const suspect = new BoardHealth();
    suspect.apply(fail());
    assert.equal(BoardHealth.restore(suspect.snapshot()).apply(fail())?.to, "quarantined", "one more failure quarantines it, as it would have");

    const recovering = new BoardHealth();
    recovering.apply(fail());
    recovering.apply(fail());
    recovering.apply(pass);
    assert.equal(BoardHealth.restore(recovering.snapshot()).apply(pass)?.to, "healthy", "the pass before the restart counts");
  });

  it("a canary result it has applied already (its agent sends the last one again at each attach) changes nothing", () => {
    const h = new BoardHealth();
    h.apply({ ...fail(), at: 1000 });
    assert.equal(h.state, "suspect");
    const restored = BoardHealth.restore(h.snapshot());
    assert.equal(restored.apply({ ...fail(), at: 1000 }), undefined, "the repeat is not a second failure");
    assert.equal(restored.state, "suspect");
    assert.equal(restored.apply({ ...fail(), at: 2000 })?.to, "quarantined", "a new failure is");
  });

  it("a board that keeps passing keeps the same snapshot (nothing to write)", () => {
    const h = new BoardHealth();
    for (let i = 1; i <= RESTORE_AFTER; i++) h.apply({ ...pass, at: i });
    const { lastCanaryAt: _a, agentCanaryAt: _b, ...before } = h.snapshot();
    for (let i = RESTORE_AFTER + 1; i < 10; i++) h.apply({ ...pass, at: i });
    const { lastCanaryAt: _c, agentCanaryAt: _d, ...after } = h.snapshot();
    assert.deepEqual(after, before);
  });
});
