import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { FarmError, MAX_TICKET_CHARS } from "../protos/index.ts";
import { TICKET_SOURCE, TicketSigner, checkTicket, expiredFor, readClaims, ticketKey, type TicketClaims } from "./session-tickets.ts";

const CLAIMS: TicketClaims = {
  session_id: "s1-aa",
  agent_id: "box#1",
  board_name: "cpu0",
  worker_id: "w1",
  route: "direct",
  expires_ms: 10_000,
  session_timeout_ms: 60_000,
};
const signer = new TicketSigner();
const expect = { key: ticketKey(signer.publicKey), boardName: "cpu0", workerId: "w1" };
const denied = (re: RegExp) => (e: unknown) => e instanceof FarmError && e.code === "PERMISSION_DENIED" && re.test(e.message);

describe("session tickets", () => {
  it("a ticket the tracker signed for this worker reads back its claims", () => {
    const claims = checkTicket(signer.issue(CLAIMS, 1000), "s1-aa", expect);
    assert.equal(claims.issued_ms, 1000);
    assert.equal(claims.worker_id, "w1");
    assert.equal(claims.nonce.length, 16);
    assert.match(signer.issue(CLAIMS), new RegExp(`^${TICKET_SOURCE}$`), "the shape a TVM client's match key is parsed by (tvm-door.ts)");
    assert.equal(expiredFor(claims, 9_999), 0);
    assert.equal(expiredFor(claims, 10_250), 250);
  });

  it("refuses what it did not sign, or what was changed, or another key's", () => {
    const ticket = signer.issue(CLAIMS);
    const [payload, signature] = ticket.split(".") as [string, string];
    const bytes = Buffer.from(payload, "base64url");
    bytes.writeUInt8(bytes.readUInt8(0) ^ 1, 0);
    for (const t of [`${bytes.toString("base64url")}.${signature}`, new TicketSigner().issue(CLAIMS), `${payload}.${signature.slice(4)}`])
      assert.throws(() => checkTicket(t, "s1-aa", expect), denied(/does not carry this farm's tracker's signature/));
    for (const t of ["", "f".repeat(32), `${payload}${signature}`, `${payload}.${"A".repeat(MAX_TICKET_CHARS)}`])
      assert.throws(() => checkTicket(t, "s1-aa", expect), denied(/is not a ticket this farm's tracker signs|does not carry/));
  });

  it("refuses a signed ticket for another session, worker, board, or a route that is not direct", () => {
    const t = signer.issue(CLAIMS);
    assert.throws(() => checkTicket(t, "s2-bb", expect), denied(/was issued for session s1-aa/));
    assert.throws(() => checkTicket(t, "s1-aa", { ...expect, workerId: "w2" }), denied(/opens another worker's standby lane/));
    assert.throws(() => checkTicket(signer.issue({ ...CLAIMS, worker_id: "" }), "s1-aa", expect), denied(/opens another worker's standby lane/));
    assert.throws(() => checkTicket(t, "s1-aa", { ...expect, boardName: "cpu1" }), denied(/opens board cpu0, not cpu1/));
    assert.throws(() => checkTicket(signer.issue({ ...CLAIMS, route: "relay" }), "s1-aa", expect), denied(/travels on the relay route/));
  });

  it("readClaims reads a ticket's claims without checking them, and nothing from a string of another shape", () => {
    assert.equal(readClaims(signer.issue(CLAIMS))?.session_id, "s1-aa");
    for (const t of ["", "nodot", `${"A".repeat(MAX_TICKET_CHARS)}.x`]) assert.equal(readClaims(t), undefined, t);
  });

  it("a ticket key is 32 bytes", () => {
    assert.throws(
      () => ticketKey(new Uint8Array(31)),
      (e: unknown) => e instanceof FarmError && e.code === "INVALID_ARGUMENT",
    );
  });
});
