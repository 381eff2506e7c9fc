import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { FarmError, LaneRoleName } from "../../protos/index.ts";
import { ARRIVAL_WAIT_MS, Tickets } from "./tickets.ts";

const hello = (session_id: string, ticket: string, role: LaneRoleName = "host") => ({ session_id, ticket, role, token: "" });
const refused = (code: string, message: RegExp) => (e: FarmError) => e.code === code && message.test(e.message);

describe("Tickets", () => {
  it("admits a session's ticket once, on a direct or auto route", async () => {
    const t = new Tickets();
    t.expect("s1", "a".repeat(32), "direct");
    t.expect("s2", "b".repeat(32), "auto");
    await t.admit(hello("s1", "a".repeat(32)));
    await t.admit(hello("s2", "b".repeat(32)));
    await assert.rejects(t.admit(hello("s1", "a".repeat(32))), refused("PERMISSION_DENIED", /ticket is used/));
  });

  it("refuses a wrong ticket (of any length), a worker's hello, a session on another route, and a forgotten one", async () => {
    const t = new Tickets();
    t.expect("s1", "a".repeat(32), "direct");
    t.expect("s2", "b".repeat(32), "relay");
    await assert.rejects(t.admit(hello("s1", "c".repeat(32))), refused("PERMISSION_DENIED", /wrong ticket/));
    await assert.rejects(t.admit(hello("s1", "a")), refused("PERMISSION_DENIED", /wrong ticket/));
    await assert.rejects(t.admit(hello("s1", "a".repeat(32), "worker")), refused("PROTOCOL_ERROR", /only hosts/));
    await assert.rejects(t.admit(hello("s2", "b".repeat(32))), refused("PERMISSION_DENIED", /relay route/));
    t.forget("s1");
    await assert.rejects(t.admit(hello("s1", "a".repeat(32)), false), refused("NOT_FOUND", /no session "s1"/));
  });

  it("waits for an assignment that is on its way, and for no other", async () => {
    const t = new Tickets();
    const early = t.admit(hello("s1", "a".repeat(32)));
    t.expect("s1", "a".repeat(32), "direct");
    await early;
    // Without waiting: refused at once.
    const t0 = performance.now();
    await assert.rejects(t.admit(hello("s2", "b".repeat(32)), false), refused("NOT_FOUND", /s2/));
    assert.ok(performance.now() - t0 < ARRIVAL_WAIT_MS / 2);
  });

  it("a host whose session never arrives is refused after the arrival wait", { timeout: ARRIVAL_WAIT_MS * 5 }, async () => {
    const t = new Tickets();
    const t0 = performance.now();
    await assert.rejects(t.admit(hello("s9", "a".repeat(32))), refused("NOT_FOUND", /s9/));
    assert.ok(performance.now() - t0 >= ARRIVAL_WAIT_MS - 5);
  });

  it("spends a ticket for the relay once, and not one a host took", async () => {
    const t = new Tickets();
    t.expect("s1", "a".repeat(32), "auto");
    assert.equal(t.take("s1"), "a".repeat(32));
    assert.equal(t.take("s1"), undefined);
    await assert.rejects(t.admit(hello("s1", "a".repeat(32))), refused("PERMISSION_DENIED", /ticket is used/));
    t.expect("s2", "b".repeat(32), "direct");
    await t.admit(hello("s2", "b".repeat(32)));
    assert.equal(t.take("s2"), undefined);
  });
});
