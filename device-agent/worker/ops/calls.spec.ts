/** A call's time limit: the call's own, the board's default, never past what its session has left; its TIMEOUT says which. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { callLimit } from "./calls.ts";

const NOW = 1_000_000;

describe("a call's time limit", () => {
  it("is the board's default when the call names none, and says so with how to change it", () => {
    const l = callLimit(0, 60_000, undefined, NOW);
    assert.equal(l.ms, 60_000);
    assert.match(l.why, /the board's default: its agent's --call-timeout-ms, 60000 ms/);
    assert.match(l.why, /fn\.withOptions\(\{ timeoutMs \}\)/);
    assert.match(l.why, /timeout= in seconds in Python/);
  });

  it("is the call's own timeoutMs when it names one", () => {
    const l = callLimit(400, 60_000, undefined, NOW);
    assert.equal(l.ms, 400);
    assert.match(l.why, /the call's own timeoutMs; timeout= in seconds in Python/);
  });

  it("is never past what the session has left for calls, and says to ask for a longer session", () => {
    const callsEnd = { at: NOW + 2500, sessionTimeoutMs: 4000 };
    const l = callLimit(0, 60_000, callsEnd, NOW);
    assert.equal(l.ms, 2500);
    assert.match(l.why, /all its session had left: its sessionTimeoutMs of 4000 ms/);
    assert.match(l.why, /request\(key, \{ sessionTimeoutMs \}\), session_timeout= in Python/);
    assert.equal(callLimit(10_000, 60_000, callsEnd, NOW).ms, 2500, "a call's own limit too");
    assert.deepEqual(callLimit(1000, 60_000, callsEnd, NOW), callLimit(1000, 60_000, undefined, NOW), "a shorter limit of its own stands");
  });

  it("is left to the session's own end once its calls' time is over", () => {
    // Less than the end grace before the lease's end: the session's end (SESSION_TIMEOUT) stops such a call.
    assert.equal(callLimit(0, 60_000, { at: NOW - 5, sessionTimeoutMs: 4000 }, NOW).ms, 60_000);
  });
});
