/** The tracker's side of lane bytes: which agent's report moves which session, and a board's figures. */
import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { afterEach, beforeEach, describe, it, mock } from "node:test";
import type { Route } from "../protos/index.ts";
import { Lease, type SessionStream } from "./lease.ts";
import { applySessionBytes, boardBytes, bytesNow } from "./lane-bytes.ts";
import type { Agent, Board, BoardLease } from "./registry.ts";

/** A host's Session stream that takes the grant and nothing more. */
function hostStream(): SessionStream {
  const s = new EventEmitter() as EventEmitter & { write(): boolean; end(): void; writableEnded: boolean };
  s.write = () => true;
  s.end = () => {};
  s.writableEnded = false;
  return s as unknown as SessionStream;
}

const agentA = { control: {} } as unknown as Agent;
const agentB = { control: {} } as unknown as Agent;

/** A lease of board `b1` of agent A, its lane open as `lane` (direct: the agent said so). */
function openLease(route: Route, open = true): BoardLease {
  const board = { id: "b1", agent: agentA, bytes: { toBoard: 0, fromBoard: 0 } } as unknown as Board;
  const lease = new Lease("s1", "t", board, "c", undefined, route, { openTimeoutMs: 10_000, sessionTimeoutMs: 60_000, endGraceMs: 1000 }, () => {});
  lease.grant(hostStream(), { session_id: "s1", route, ticket: "t" });
  if (open && route === "direct") lease.opened("direct");
  return lease as BoardLease;
}

const report = (to_board: number, from_board: number) => ({ session_id: "s1", to_board, from_board });

describe("lane bytes at the tracker", () => {
  beforeEach(() => mock.timers.enable({ apis: ["setTimeout"] }));
  afterEach(() => mock.timers.reset());

  it("a direct lane's bytes are its agent's last report, and only growing ones", () => {
    const lease = openLease("direct");
    assert.deepEqual(lease.relayed, { toBoard: 0, fromBoard: 0 });
    assert.equal(applySessionBytes(agentA, lease, report(100, 20)), undefined);
    assert.deepEqual(lease.relayed, { toBoard: 100, fromBoard: 20 });
    assert.match(applySessionBytes(agentA, lease, report(99, 30)) ?? "", /went down/);
    for (const bad of [-1, 0.5, Number.NaN, 2 ** 53]) assert.match(applySessionBytes(agentA, lease, report(bad, 30)) ?? "", /not byte counts/);
    assert.deepEqual(lease.relayed, { toBoard: 100, fromBoard: 20 }, "a refused report changes nothing");
    lease.end(null);
  });

  it("another agent's report changes nothing; a session the tracker no longer holds is no one's", () => {
    const lease = openLease("direct");
    assert.match(applySessionBytes(agentB, lease, report(1e6, 1e6)) ?? "", /not on one of its boards/);
    assert.deepEqual(lease.relayed, { toBoard: 0, fromBoard: 0 });
    assert.equal(applySessionBytes(agentA, undefined, report(1, 1)), undefined);
    lease.end(null);
  });

  it("relay and grpc lanes keep the tracker's own count: a report for them is ignored", () => {
    for (const route of ["relay", "grpc"] as const) {
      const lease = openLease(route);
      assert.equal(applySessionBytes(agentA, lease, report(1e6, 1e6)), undefined);
      assert.equal(lease.directBytes, undefined, route);
      lease.end(null);
    }
    const unopened = openLease("direct", false);
    assert.equal(applySessionBytes(agentA, unopened, report(1e6, 1e6)), undefined);
    assert.equal(unopened.directBytes, undefined, "a lane the agent never said was open");
    unopened.end(null);
  });

  it("a board's bytes are its ended sessions' and its running session's so far", () => {
    const lease = openLease("direct");
    applySessionBytes(agentA, lease, report(5, 7));
    const board = { id: "b1", bytes: { toBoard: 100, fromBoard: 200 }, lease };
    assert.deepEqual(boardBytes(board), { toBoard: 105, fromBoard: 207 });
    const idle = { id: "b2", bytes: { toBoard: 1, fromBoard: 2 }, lease: undefined };
    assert.deepEqual(bytesNow([board, idle]), {
      boards: { b1: { toBoard: 105, fromBoard: 207 }, b2: { toBoard: 1, fromBoard: 2 } },
      sessions: { s1: { toBoard: 5, fromBoard: 7 } },
    });
    lease.end(null);
  });
});
