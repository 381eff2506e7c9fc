import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { BoardStateName } from "../../protos/index.ts";
import type { FarmEvent } from "../events.ts";
import type { Registry } from "../registry.ts";
import type { Scheduler } from "../scheduler.ts";
import { coalesce, resolveLiveViewOptions } from "./feed.ts";
import { LiveHistory } from "./history.ts";

const board = (id: string, state: BoardStateName, change: "added" | "changed" | "removed"): FarmEvent => ({
  type: "board",
  at: 1,
  board: { id, key: "k", kind: "cpu", labels: {}, capabilities: {}, agent_id: "a#1", agent_name: "a", state, session_id: "", client_id: "" },
  change,
});
const queue = (key: string, pending: number): FarmEvent => ({ type: "queue", at: 1, key, pending });
const session = (id: string, change: "granted" | "ended", at: number, reason?: string): FarmEvent => ({
  type: "session",
  at,
  session: id,
  board: "a/b0",
  key: "k",
  client: "c",
  change,
  ...(change === "ended" ? { reason: reason ?? "OK", durationMs: 5 } : {}),
});

describe("coalesce", () => {
  it("drops superseded board states and queue depths, keeping order", () => {
    const events = [
      board("a/b0", "starting", "added"),
      queue("k", 1),
      board("a/b0", "free", "changed"),
      session("s1", "granted", 1),
      board("a/b0", "busy", "changed"),
      queue("k", 0),
      board("a/b1", "free", "changed"),
    ];
    const out = coalesce(events);
    assert.deepEqual(
      out.map((e) => (e.type === "board" ? `${e.board.id}:${e.change}:${e.board.state}` : e.type === "queue" ? `q${e.pending}` : e.type)),
      ["a/b0:added:starting", "session", "a/b0:changed:busy", "q0", "a/b1:changed:free"],
    );
  });

  it("keeps a removal and the events before an addition", () => {
    const events = [board("a/b0", "free", "changed"), board("a/b0", "free", "removed")];
    assert.deepEqual(
      coalesce(events).map((e) => e.type === "board" && e.change),
      ["removed"],
    );
    assert.equal(coalesce([queue("k", 3)]).length, 1);
  });
});

describe("LiveHistory", () => {
  function farm() {
    const b = { id: "a/b0", key: "k", lease: undefined as object | undefined, drain: "", ready: true, health: { grantable: true } };
    let pending = 0;
    const registry = { boards: () => [b], boardsOfKey: (k: string) => (k === "k" ? [b] : []) } as unknown as Registry;
    const scheduler = { queuedKeys: () => (pending ? ["k"] : []), pendingOf: () => pending } as unknown as Scheduler;
    return { b, registry, scheduler, setPending: (n: number) => (pending = n) };
  }

  it("averages busy boards over the interval and keeps the peak queue depth", () => {
    const f = farm();
    const h = new LiveHistory(f.registry, f.scheduler, { maxSessions: 10, maxSamples: 3 });
    const t0 = Date.now();
    h.sample(t0);
    f.b.lease = {};
    h.record(session("s1", "granted", t0 + 250));
    h.record(queue("k", 4));
    f.b.lease = undefined;
    h.record(session("s1", "ended", t0 + 750));
    const s = h.sample(t0 + 1000);
    assert.deepEqual(s.keys.k, { pending: 0, peakPending: 4, busy: 0.5, total: 1 });
    // The next interval starts from the registry: idle.
    assert.deepEqual(h.sample(t0 + 2000).keys.k, { pending: 0, peakPending: 0, busy: 0, total: 1 });
    h.sample(t0 + 3000);
    assert.equal(h.series().length, 3, "at most maxSamples are kept");
    assert.equal(h.series()[0]!.at, t0 + 1000);
  });

  it("keeps the last sessions, newest first, and each board's last failure", () => {
    const f = farm();
    const h = new LiveHistory(f.registry, f.scheduler, { maxSessions: 3, maxSamples: 3 });
    for (let i = 1; i <= 5; i++) h.record(session(`s${i}`, "ended", i, i === 4 ? "AGENT_LOST" : "OK"));
    assert.deepEqual(
      h.sessions().map((s) => s.session),
      ["s5", "s4", "s3"],
    );
    assert.deepEqual(h.boardIssues(), { "a/b0": { reason: "AGENT_LOST", at: 4, session: "s4" } });
    h.record(board("a/b0", "free", "removed"));
    assert.deepEqual(h.boardIssues(), {});
  });
});

describe("resolveLiveViewOptions", () => {
  it("applies defaults and refuses nonsense", () => {
    assert.equal(resolveLiveViewOptions().maxBufferedBytes, 1 << 20);
    assert.throws(() => resolveLiveViewOptions({ maxBufferedBytes: -1 }), /maxBufferedBytes/);
    assert.throws(() => resolveLiveViewOptions({ sampleIntervalMs: 10 }), /sampleIntervalMs/);
  });
});
