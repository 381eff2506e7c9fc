/** The board health state machine, transition by transition. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { BoardHealth, QUARANTINE_AFTER, RESTORE_AFTER } from "./health.ts";

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
});
