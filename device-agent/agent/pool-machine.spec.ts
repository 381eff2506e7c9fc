/**
 * One board's session workers as a pure machine (device-agent/agent/pool-machine.ts),
 * on a fake clock: the shell's timers are effects, so the clock here arms and
 * disarms them from the effects and `advance()` delivers `timerFired` when one
 * is due. Effects whose outcome the machine needs (spawn, the session folder,
 * the assignment) are answered by the spec, as the shell would. The
 * `describe` blocks follow the machine's transition table, row by row, then
 * what it ignores.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FarmError, WORKER_MAX_PENDING_REQUESTS, type WorkerMessage } from "../../protos/index.ts";
import {
  armedTimers,
  ENDED_KEPT,
  begin,
  nextIdle,
  step,
  workerStates,
  type PoolConfig,
  type PoolEffect,
  type PoolEvent,
  type PoolMachineState,
  type PoolStep,
  type PoolTimer,
  type WorkerId,
  type WorkerRecord,
} from "./pool-machine.ts";
import { MachineClock, ignoredWhy } from "../../tests/helpers/machine-clock.ts";

const GRACE_MS = 1000;
const CANARY_MS = 60_000;

const key = (t: PoolTimer) => (t.name === "canary" ? "canary" : `grace:${t.worker}`);

/** One board's pool on a fake clock (tests/helpers/machine-clock.ts). */
class Clock extends MachineClock<PoolMachineState, PoolEvent, PoolEffect, PoolTimer, PoolStep> {
  constructor(opts: Partial<PoolConfig> = {}) {
    super(
      {
        step,
        started: (e) => (e.kind === "startTimer" ? { timer: e.timer, ms: e.ms } : undefined),
        cancelled: (e) => (e.kind === "cancelTimer" ? e.timer : undefined),
        fired: (timer) => ({ kind: "timerFired", timer }),
        armed: armedTimers,
        key,
      },
      begin({
        boardName: "b1",
        kind: "cpu",
        warm: 1,
        standby: false,
        ownUids: false,
        canaryIntervalMs: 0,
        endGraceMs: GRACE_MS,
        ...opts,
      }),
    );
  }

  /** What worker `id` says. */
  say(id: WorkerId, msg: WorkerMessage): PoolStep {
    return this.feed({ kind: "message", worker: id, msg });
  }

  worker(id: WorkerId): WorkerRecord {
    const w = this.state.workers.find((x) => x.id === id);
    assert.ok(w, `worker ${id} is there`);
    return w;
  }
}

const ready: WorkerMessage = { kind: "ready", m: {} };
const ended = (sessionId: string, reusable: boolean, error?: FarmError): WorkerMessage => ({
  kind: "ended",
  m: { session_id: sessionId, reusable, error: error ? { details_json: "", ...error.toWire() } : null },
});

/** Answers each `spawn` among `effects` as the shell does when the fork works (pid 100 + id). */
function spawnAll(c: Clock, effects: readonly PoolEffect[]): void {
  for (const e of effects) if (e.kind === "spawn") c.feed({ kind: "spawned", worker: e.worker, pid: 100 + e.worker });
}

/** A pool whose `warm` workers are idle (no standby lanes), effects taken. */
function warmPool(opts: Partial<PoolConfig> = {}): Clock {
  const c = new Clock(opts);
  c.feed({ kind: "fill" });
  spawnAll(c, c.take());
  for (const w of c.state.workers) c.say(w.id, ready);
  assert.equal(workerStates(c.state).idle, c.state.config.warm);
  c.take();
  return c;
}

/** Assigns `sessionId` and answers the folder and the assignment as the shell does when both work; returns its worker. */
function serve(c: Clock, sessionId: string, lanePort = 0): WorkerId {
  c.feed({ kind: "assign", sessionId, token: "t", route: "direct", lanePort });
  const w = c.state.workers.find((x) => x.sessionId === sessionId)!;
  c.feed({ kind: "folderMade", worker: w.id });
  c.feed({ kind: "assignSent", worker: w.id, delivered: true });
  assert.equal(c.worker(w.id).state, "serving");
  assert.equal(c.worker(w.id).assigning, undefined);
  return w.id;
}

const kinds = (effects: readonly PoolEffect[]) => effects.map((e) => e.kind);

describe("pool machine: starting (forked, warming up)", () => {
  it("fill spawns workers until `warm` are starting or idle", () => {
    const c = new Clock({ warm: 2 });
    assert.deepEqual(c.take(), []);
    c.feed({ kind: "fill" });
    assert.deepEqual(c.take(), [
      { kind: "spawn", worker: 0 },
      { kind: "spawn", worker: 1 },
    ]);
    assert.deepEqual(workerStates(c.state), { starting: 2, idle: 0, serving: 0, exiting: 0 });
    c.feed({ kind: "fill" });
    assert.deepEqual(c.take(), [], "enough are starting");
  });

  it("spawned records the worker's pid", () => {
    const c = new Clock();
    c.feed({ kind: "fill" });
    c.feed({ kind: "spawned", worker: 0, pid: 4242 });
    assert.equal(c.worker(0).pid, 4242);
    assert.equal(c.worker(0).state, "starting");
  });

  it("spawnFailed forgets the worker and does not spawn again (it would fail the same way, for ever)", () => {
    const c = new Clock();
    c.feed({ kind: "fill" });
    c.take();
    const s = c.feed({ kind: "spawnFailed", worker: 0 });
    assert.equal(s.outcome, "applied");
    assert.deepEqual(s.effects, []);
    assert.equal(c.state.workers.length, 0);
  });

  it('"ready" counts its start and makes it idle; the board is ready, then its next session\'s folder is prepared', () => {
    const c = new Clock();
    c.feed({ kind: "fill" });
    spawnAll(c, c.take());
    c.say(0, ready);
    assert.deepEqual(c.take(), [{ kind: "countReady", worker: 0 }, { kind: "boardReady" }, { kind: "prepareFolder", worker: 0 }]);
    assert.equal(c.worker(0).state, "idle");
    assert.equal(c.worker(0).canaryAsked, false, "its start-up canary came before ready");
  });

  it('with standby lanes, "ready" opens its standby lane first; standbyOpened makes it idle with that port', () => {
    const c = new Clock({ standby: true });
    c.feed({ kind: "fill" });
    spawnAll(c, c.take());
    c.say(0, ready);
    assert.deepEqual(c.take(), [
      { kind: "countReady", worker: 0 },
      { kind: "openStandby", worker: 0 },
    ]);
    assert.equal(c.worker(0).state, "starting");
    c.feed({ kind: "standbyOpened", worker: 0, port: 4100 });
    assert.deepEqual(c.take(), [{ kind: "boardReady" }, { kind: "prepareFolder", worker: 0 }]);
    assert.equal(c.worker(0).state, "idle");
    assert.equal(nextIdle(c.state)?.lanePort, 4100, "BoardReady names its lane");
  });

  it("a standby lane that could not open leaves the worker without one (port 0)", () => {
    const c = new Clock({ standby: true });
    c.feed({ kind: "fill" });
    spawnAll(c, c.take());
    c.say(0, ready);
    c.feed({ kind: "standbyOpened", worker: 0, port: 0 });
    assert.equal(c.worker(0).lanePort, 0);
    assert.equal(c.worker(0).state, "idle");
  });

  it("a worker that becomes idle while another serves does not make the board ready", () => {
    const c = warmPool();
    const w = serve(c, "s1");
    c.take();
    c.say(w, { kind: "foreign_code", m: { session_id: "s1" } });
    const [spawned] = c.take();
    assert.deepEqual(spawned, { kind: "spawn", worker: 1 });
    c.feed({ kind: "spawned", worker: 1, pid: 101 });
    c.say(1, ready);
    assert.deepEqual(c.take(), [
      { kind: "countReady", worker: 1 },
      { kind: "prepareFolder", worker: 1 },
    ]);
    assert.equal(c.worker(1).state, "idle");
  });
});

describe("pool machine: assign (AssignSession)", () => {
  it("goes to the worker whose standby lane the grant named", () => {
    const c = new Clock({ warm: 2, standby: true });
    c.feed({ kind: "fill" });
    spawnAll(c, c.take());
    for (const [id, port] of [
      [0, 4100],
      [1, 4101],
    ] as const) {
      c.say(id, ready);
      c.feed({ kind: "standbyOpened", worker: id, port });
    }
    c.take();
    c.feed({ kind: "assign", sessionId: "s1", token: "t", route: "direct", lanePort: 4101 });
    assert.deepEqual(c.take(), [{ kind: "makeSessionFolder", worker: 1, sessionId: "s1" }]);
    assert.equal(c.worker(1).state, "serving");
    assert.equal(c.worker(0).state, "idle");
  });

  it("else to the first idle worker (also when the named lane is no idle worker's)", () => {
    const c = warmPool({ warm: 2 });
    c.feed({ kind: "assign", sessionId: "s1", token: "t", route: "grpc", lanePort: 9999 });
    assert.deepEqual(c.take(), [{ kind: "makeSessionFolder", worker: 0, sessionId: "s1" }]);
    assert.deepEqual(c.worker(0).assigning, { phase: "folder", token: "t", route: "grpc", lanes: [] });
  });

  it("folderMade sends the worker its session", () => {
    const c = warmPool();
    c.feed({ kind: "assign", sessionId: "s1", token: "t", route: "relay", lanePort: 0 });
    c.take();
    c.feed({ kind: "folderMade", worker: 0 });
    assert.deepEqual(c.take(), [{ kind: "sendAssign", worker: 0, sessionId: "s1", token: "t", route: "relay" }]);
  });

  it("folderMade sends the lease the assignment carried, also after the session waited for a worker", () => {
    const lease = { timeoutMs: 5000, endsAt: 12_345 };
    const c = warmPool();
    c.feed({ kind: "assign", sessionId: "s1", token: "t", route: "direct", lanePort: 0, lease });
    c.take();
    c.feed({ kind: "folderMade", worker: 0 });
    assert.deepEqual(c.take(), [{ kind: "sendAssign", worker: 0, sessionId: "s1", token: "t", route: "direct", lease }]);
    // A second session finds no idle worker: it waits, its lease with it.
    c.feed({ kind: "assign", sessionId: "s2", token: "u", route: "relay", lanePort: 0, lease });
    assert.deepEqual(c.state.waiting, { sessionId: "s2", token: "u", route: "relay", lanes: [], lease });
  });

  it("folderFailed ends the session with the error (counted INTERNAL); the worker is idle again and the board ready", () => {
    const c = warmPool();
    c.feed({ kind: "assign", sessionId: "s1", token: "t", route: "direct", lanePort: 0 });
    c.feed({ kind: "laneArrived", sessionId: "s1", lane: 7 });
    c.take();
    const error = new FarmError("TOO_LARGE", "the agent cannot make session s1's folder: ENOSPC");
    c.feed({ kind: "folderFailed", worker: 0, error });
    assert.deepEqual(c.take(), [
      { kind: "countEnd", reason: "INTERNAL" },
      { kind: "sessionEnded", sessionId: "s1", reason: error },
      { kind: "dropLane", lane: 7 },
      { kind: "boardReady" },
    ]);
    assert.equal(c.worker(0).state, "idle");
    assert.equal(c.worker(0).sessionId, undefined);
    assert.equal(c.worker(0).folder, undefined);
  });

  it("assignSent (delivered): it serves; the board is ready if another worker is idle; lanes that came meanwhile are handed over", () => {
    const c = warmPool({ warm: 2 });
    c.feed({ kind: "assign", sessionId: "s1", token: "t", route: "direct", lanePort: 0 });
    c.feed({ kind: "folderMade", worker: 0 });
    c.feed({ kind: "laneArrived", sessionId: "s1", lane: 3 });
    c.take();
    c.feed({ kind: "assignSent", worker: 0, delivered: true });
    assert.deepEqual(c.take(), [{ kind: "boardReady" }, { kind: "handLane", worker: 0, sessionId: "s1", lane: 3 }]);
    assert.equal(c.worker(0).state, "serving");
  });

  it("assignSent (delivered) with no other idle worker: the board is not ready", () => {
    const c = warmPool();
    c.feed({ kind: "assign", sessionId: "s1", token: "t", route: "direct", lanePort: 0 });
    c.feed({ kind: "folderMade", worker: 0 });
    c.take();
    c.feed({ kind: "assignSent", worker: 0, delivered: true });
    assert.deepEqual(c.take(), []);
  });

  it("assignSent (not delivered): the worker is killed and the session ends RUNTIME_CRASH", () => {
    const c = warmPool();
    c.feed({ kind: "assign", sessionId: "s1", token: "t", route: "direct", lanePort: 0 });
    c.feed({ kind: "folderMade", worker: 0 });
    c.feed({ kind: "laneArrived", sessionId: "s1", lane: 5 });
    c.take();
    c.feed({ kind: "assignSent", worker: 0, delivered: false });
    assert.deepEqual(c.take(), [
      { kind: "countEnd", reason: "RUNTIME_CRASH" },
      { kind: "kill", worker: 0, signal: "SIGKILL", group: false },
      { kind: "sessionEnded", sessionId: "s1", reason: new FarmError("RUNTIME_CRASH", "the session worker (pid 100) went away before it took the session") },
      { kind: "dropLane", lane: 5 },
    ]);
    assert.equal(c.worker(0).state, "exiting");
    assert.equal(c.worker(0).folder, "s1", "its folder goes when it is reaped");
  });

  it("an assignment that finds no idle worker waits, its lanes with it, and starts one; the next idle worker takes it", () => {
    const c = warmPool();
    serve(c, "s1");
    c.say(0, { kind: "foreign_code", m: { session_id: "s1" } });
    spawnAll(c, c.take());
    // Worker 1 is starting; the tracker granted on a readiness sent before: s2 waits.
    c.feed({ kind: "assign", sessionId: "s2", token: "t2", route: "relay", lanePort: 0 });
    assert.deepEqual(c.take(), [{ kind: "sessionWaits", sessionId: "s2" }]);
    assert.deepEqual(c.state.waiting, { sessionId: "s2", token: "t2", route: "relay", lanes: [] });
    c.feed({ kind: "laneArrived", sessionId: "s2", lane: 9 });
    assert.deepEqual(c.state.waiting?.lanes, [9]);
    c.say(1, ready);
    assert.deepEqual(c.take(), [
      { kind: "countReady", worker: 1 },
      { kind: "makeSessionFolder", worker: 1, sessionId: "s2" },
    ]);
    assert.equal(c.state.waiting, undefined);
    c.feed({ kind: "folderMade", worker: 1 });
    c.feed({ kind: "assignSent", worker: 1, delivered: true });
    assert.deepEqual(c.take(), [
      { kind: "sendAssign", worker: 1, sessionId: "s2", token: "t2", route: "relay" },
      { kind: "handLane", worker: 1, sessionId: "s2", lane: 9 },
    ]);
  });

  it("an assignment with no idle worker and none starting starts one", () => {
    const c = new Clock({ warm: 1 });
    c.feed({ kind: "assign", sessionId: "s1", token: "t", route: "direct", lanePort: 0 });
    assert.deepEqual(c.take(), [
      { kind: "spawn", worker: 0 },
      { kind: "sessionWaits", sessionId: "s1" },
    ]);
  });

  it("an assignment after close ends the session INTERNAL (counted)", () => {
    const c = warmPool();
    c.feed({ kind: "close" });
    c.take();
    c.feed({ kind: "assign", sessionId: "s1", token: "t", route: "direct", lanePort: 0 });
    assert.deepEqual(c.take(), [
      { kind: "countEnd", reason: "INTERNAL" },
      { kind: "sessionEnded", sessionId: "s1", reason: new FarmError("INTERNAL", "board b1 is shutting down; session s1 was not served") },
    ]);
  });

  it("a second assignment while one waits replaces it; the first one's lanes are closed", () => {
    const c = new Clock();
    c.feed({ kind: "assign", sessionId: "s1", token: "t", route: "direct", lanePort: 0 });
    c.feed({ kind: "laneArrived", sessionId: "s1", lane: 1 });
    c.take();
    c.feed({ kind: "assign", sessionId: "s2", token: "t", route: "direct", lanePort: 0 });
    assert.deepEqual(c.take(), [
      { kind: "dropLane", lane: 1 },
      { kind: "sessionWaits", sessionId: "s2" },
    ]);
    assert.equal(c.state.waiting?.sessionId, "s2");
  });
});

describe("pool machine: a session taken by its ticket (claimed)", () => {
  it("an idle worker that took a session by its ticket serves it: its prepared folder is the session's, the tracker hears the lane; the assignment that follows is ignored", () => {
    const c = warmPool({ warm: 2 });
    c.feed({ kind: "claimed", worker: 0, sessionId: "s1" });
    assert.deepEqual(c.take(), [{ kind: "adoptFolder", worker: 0, sessionId: "s1" }, { kind: "laneOpened", sessionId: "s1" }, { kind: "boardReady" }]);
    assert.equal(c.worker(0).state, "serving");
    assert.equal(c.worker(0).sessionId, "s1");
    assert.equal(c.worker(0).folder, "s1");
    assert.equal(c.worker(0).laneOpened, true);
    assert.match(ignoredWhy(c.feed({ kind: "assign", sessionId: "s1", token: "t", route: "direct", lanePort: 0 })), /took it by its ticket already/);
    // It ends as any session does: idle again, its next folder prepared.
    c.say(0, ended("s1", true));
    assert.deepEqual(kinds(c.take()), ["countEnd", "sessionEnded", "boardReady", "prepareFolder", "removeSessionFolder"]);
  });

  it("an assignment that comes after its session, taken by its ticket, ended here starts nothing", () => {
    const c = warmPool();
    c.feed({ kind: "claimed", worker: 0, sessionId: "s1" });
    c.say(0, ended("s1", true));
    c.take();
    assert.match(ignoredWhy(c.feed({ kind: "assign", sessionId: "s1", token: "t", route: "direct", lanePort: 0 })), /ended before its assignment came/);
    assert.equal(c.worker(0).state, "idle");
    // Only the last ENDED_KEPT are remembered.
    for (let i = 2; i <= ENDED_KEPT + 1; i++) {
      c.feed({ kind: "claimed", worker: 0, sessionId: `s${i}` });
      c.say(0, ended(`s${i}`, true));
    }
    c.take();
    assert.equal(c.state.ended.length, ENDED_KEPT);
    assert.equal(c.state.ended.includes("s1"), false);
  });

  it("a claim whose assignment came first is its lane's opening, once", () => {
    const c = warmPool();
    serve(c, "s1");
    c.take();
    c.feed({ kind: "claimed", worker: 0, sessionId: "s1" });
    assert.deepEqual(c.take(), [{ kind: "laneOpened", sessionId: "s1" }]);
    assert.match(ignoredWhy(c.feed({ kind: "claimed", worker: 0, sessionId: "s1" })), /reported open already/);
  });

  it("a claim with a ticket the agent refuses, for another session, or from a worker not idle is a breach", () => {
    const refused = warmPool();
    refused.feed({ kind: "claimed", worker: 0, sessionId: "s1", error: new FarmError("PERMISSION_DENIED", "the ticket for session s1 is forged") });
    const [cut] = refused.take();
    assert.equal(
      cut?.kind === "cutOff" && cut.error.message,
      "the session's worker broke the agent's protocol: it took session s1 by a ticket that does not open it: the ticket for session s1 is forged",
    );
    assert.equal(refused.worker(0).state, "exiting");

    const other = warmPool();
    serve(other, "s1");
    other.take();
    other.feed({ kind: "claimed", worker: 0, sessionId: "s2" });
    assert.deepEqual(kinds(other.take()), ["cutOff", "countEnd", "kill", "sessionEnded"]);

    const starting = new Clock({ standby: true });
    starting.feed({ kind: "fill" });
    spawnAll(starting, starting.take());
    starting.feed({ kind: "claimed", worker: 0, sessionId: "s1" });
    const [cutS] = starting.take();
    assert.equal(
      cutS?.kind === "cutOff" && cutS.error.message,
      "the session's worker broke the agent's protocol: it took session s1 by its ticket while starting",
    );
  });

  it("a claim from a worker being killed or gone is ignored", () => {
    const c = warmPool();
    c.say(0, ready);
    c.take();
    assert.match(ignoredWhy(c.feed({ kind: "claimed", worker: 0, sessionId: "s1" })), /being killed/);
    assert.match(ignoredWhy(c.feed({ kind: "claimed", worker: 9, sessionId: "s1" })), /has gone/);
  });
});

describe("pool machine: serving (its session runs)", () => {
  it("laneArrived for its session hands the lane to it", () => {
    const c = warmPool();
    serve(c, "s1");
    c.take();
    c.feed({ kind: "laneArrived", sessionId: "s1", lane: 2 });
    assert.deepEqual(c.take(), [{ kind: "handLane", worker: 0, sessionId: "s1", lane: 2 }]);
  });

  it('"foreign_code" (tainted): it never serves again, and its successor boots while it serves', () => {
    const c = warmPool();
    serve(c, "s1");
    c.take();
    c.say(0, { kind: "foreign_code", m: { session_id: "s1" } });
    assert.deepEqual(c.take(), [{ kind: "spawn", worker: 1 }]);
    assert.equal(c.worker(0).nativeCode, true);
  });

  it('"lane_opened" tells the tracker once', () => {
    const c = warmPool();
    serve(c, "s1");
    c.take();
    c.say(0, { kind: "lane_opened", m: { session_id: "s1", ticket: "" } });
    assert.deepEqual(c.take(), [{ kind: "laneOpened", sessionId: "s1" }]);
    assert.match(ignoredWhy(c.say(0, { kind: "lane_opened", m: { session_id: "s1", ticket: "" } })), /reported open already/);
  });

  it('"counters" are counted', () => {
    const c = warmPool();
    serve(c, "s1");
    c.take();
    c.say(0, { kind: "counters", m: { calls: 3, time_evaluations: 1, errors: { TIMEOUT: 1 } } });
    assert.deepEqual(c.take(), [{ kind: "countCalls", calls: 3, timeEvaluations: 1, errors: { TIMEOUT: 1 } }]);
  });

  it('"lane_bytes" for its own session go to the shell; for another session they are a breach', () => {
    const c = warmPool();
    serve(c, "s1");
    c.take();
    c.say(0, { kind: "lane_bytes", m: { session_id: "s1", to_board: 10, from_board: 20 } });
    assert.deepEqual(c.take(), [{ kind: "laneBytes", worker: 0, sessionId: "s1", toBoard: 10, fromBoard: 20 }]);
    c.say(0, { kind: "lane_bytes", m: { session_id: "s2", to_board: 1, from_board: 1 } });
    const [cut] = c.take();
    assert.equal(
      cut?.kind === "cutOff" && cut.error.message,
      "the session's worker broke the agent's protocol: lane_bytes for session s2, which it does not serve",
    );
    assert.equal(c.worker(0).state, "exiting");
  });

  it("store and FPGA requests are served, a few at a time; one more is a breach", () => {
    const c = warmPool({ kind: "vta" });
    serve(c, "s1");
    c.take();
    const take: WorkerMessage = { kind: "store_take", m: { id: 1, sha256: "a".repeat(64), size: 10 } };
    for (let i = 0; i < WORKER_MAX_PENDING_REQUESTS; i++) c.say(0, take);
    assert.deepEqual(
      c.take(),
      Array.from({ length: WORKER_MAX_PENDING_REQUESTS }, () => ({ kind: "serveRequest", worker: 0, request: take })),
    );
    assert.equal(c.worker(0).pending, WORKER_MAX_PENDING_REQUESTS);
    c.say(0, { kind: "program_fpga", m: { id: 2, bitstream: "b.bit", config: "c.json" } });
    assert.deepEqual(kinds(c.take()), ["cutOff", "countEnd", "kill", "sessionEnded"]);
  });

  it("requestDone sends the reply while it serves, and nothing once it is being killed", () => {
    const c = warmPool();
    serve(c, "s1");
    c.say(0, { kind: "store_keep", m: { id: 4, name: "f", sha256: "b".repeat(64) } });
    c.take();
    c.feed({ kind: "requestDone", worker: 0, reply: { store_kept: { id: 4 } } });
    assert.deepEqual(c.take(), [{ kind: "send", worker: 0, msg: { store_kept: { id: 4 } } }]);
    assert.equal(c.worker(0).pending, 0);
    c.say(0, { kind: "store_keep", m: { id: 5, name: "f", sha256: "b".repeat(64) } });
    c.feed({ kind: "endSession", sessionId: "s1", reason: new FarmError("CANCELLED", "the host left session s1") });
    c.take();
    c.feed({ kind: "requestDone", worker: 0, reply: { store_kept: { id: 5 } } });
    assert.deepEqual(c.take(), []);
  });

  it('"ended", reusable, no native code, fewer than `warm` idle: idle again, the board ready, its next folder prepared, then the old one removed', () => {
    const c = warmPool();
    serve(c, "s1");
    c.take();
    c.say(0, ended("s1", true));
    assert.deepEqual(c.take(), [
      { kind: "countEnd", reason: "OK" },
      { kind: "sessionEnded", sessionId: "s1", reason: null },
      { kind: "boardReady" },
      { kind: "prepareFolder", worker: 0 },
      { kind: "removeSessionFolder", sessionId: "s1" },
    ]);
    assert.equal(c.worker(0).state, "idle");
    assert.equal(c.worker(0).sessionId, undefined);
  });

  it('"ended" with an error reports it and counts its code', () => {
    const c = warmPool();
    serve(c, "s1");
    c.take();
    const error = new FarmError("TIMEOUT", "kernel f ran past 100 ms");
    c.say(0, ended("s1", true, error));
    const [count, report] = c.take();
    assert.deepEqual(count, { kind: "countEnd", reason: "TIMEOUT" });
    assert.equal(report?.kind, "sessionEnded");
    if (report?.kind === "sessionEnded") assert.deepEqual([report.reason?.code, report.reason?.message], ["TIMEOUT", "kernel f ran past 100 ms"]);
  });

  it('"ended", reusable, while a session waits: it takes that one, and the old folder goes after', () => {
    const c = warmPool();
    serve(c, "s1");
    c.feed({ kind: "assign", sessionId: "s2", token: "t2", route: "direct", lanePort: 0 });
    c.take();
    c.say(0, ended("s1", true));
    assert.deepEqual(c.take(), [
      { kind: "countEnd", reason: "OK" },
      { kind: "sessionEnded", sessionId: "s1", reason: null },
      { kind: "makeSessionFolder", worker: 0, sessionId: "s2" },
      { kind: "removeSessionFolder", sessionId: "s1" },
    ]);
    assert.equal(c.worker(0).sessionId, "s2");
    assert.equal(c.worker(0).folder, "s2");
  });

  it('"ended", reusable, with enough idle workers: told to go (SIGTERM); with uids of their own its folder waits for its exit', () => {
    // A tainted worker's exit, seen after its successor took the next session, starts a third: two clean ones, warm 1.
    const c = warmPool({ warm: 1, ownUids: true });
    serve(c, "s0");
    c.say(0, { kind: "foreign_code", m: { session_id: "s0" } });
    c.say(0, ended("s0", true));
    spawnAll(c, c.take());
    c.say(1, ready);
    const w = serve(c, "s1");
    c.feed({ kind: "exited", worker: 0, code: null, signal: "SIGKILL", death: new FarmError("RUNTIME_CRASH", "killed") });
    spawnAll(c, c.take());
    c.say(2, ready);
    c.take();
    assert.equal(w, 1);
    c.say(1, ended("s1", true));
    assert.deepEqual(c.take(), [
      { kind: "countEnd", reason: "OK" },
      { kind: "sessionEnded", sessionId: "s1", reason: null },
      { kind: "kill", worker: 1, signal: "SIGTERM", group: false },
      { kind: "boardReady" },
    ]);
    assert.equal(c.worker(1).state, "exiting");
    assert.equal(c.worker(1).folder, "s1");
  });

  it('"ended", not reusable (or it loaded native code): killed, its successor filled in; without uids of its own the folder goes now', () => {
    const c = warmPool();
    serve(c, "s1");
    c.take();
    c.say(0, ended("s1", false));
    assert.deepEqual(c.take(), [
      { kind: "countEnd", reason: "OK" },
      { kind: "sessionEnded", sessionId: "s1", reason: null },
      { kind: "kill", worker: 0, signal: "SIGKILL", group: false },
      { kind: "spawn", worker: 1 },
      { kind: "removeSessionFolder", sessionId: "s1" },
    ]);
    // Its offer to serve again is not believed of a process native code ran in.
    const d = warmPool();
    serve(d, "s1");
    d.say(0, { kind: "foreign_code", m: { session_id: "s1" } });
    d.take();
    d.say(0, ended("s1", true));
    assert.deepEqual(
      d.take().find((e) => e.kind === "kill"),
      { kind: "kill", worker: 0, signal: "SIGKILL", group: false },
    );
  });

  it("end_session with a reason: counted with its code, killed", () => {
    const c = warmPool();
    serve(c, "s1");
    c.take();
    c.feed({ kind: "endSession", sessionId: "s1", reason: new FarmError("SESSION_TIMEOUT", "session s1 exceeded its session timeout") });
    assert.deepEqual(c.take(), [
      { kind: "countEnd", reason: "SESSION_TIMEOUT" },
      { kind: "kill", worker: 0, signal: "SIGKILL", group: false },
    ]);
    assert.equal(c.worker(0).state, "exiting");
  });

  it('a clean end_session: "end" to the worker and the grace armed; its "ended" within it disarms it', () => {
    const c = warmPool();
    serve(c, "s1");
    c.take();
    c.feed({ kind: "endSession", sessionId: "s1", reason: null });
    assert.deepEqual(c.take(), [
      { kind: "send", worker: 0, msg: { end: { session_id: "s1" } } },
      { kind: "startTimer", timer: { name: "grace", worker: 0 }, ms: GRACE_MS },
    ]);
    c.advance(GRACE_MS - 1);
    c.say(0, ended("s1", true));
    assert.deepEqual(c.take()[0], { kind: "cancelTimer", timer: { name: "grace", worker: 0 } });
    assert.deepEqual(c.advance(GRACE_MS), []);
  });

  it("the grace runs out: counted OK, killed", () => {
    const c = warmPool();
    serve(c, "s1");
    c.feed({ kind: "endSession", sessionId: "s1", reason: null });
    c.take();
    c.advance(GRACE_MS);
    assert.deepEqual(c.take(), [
      { kind: "countEnd", reason: "OK" },
      { kind: "kill", worker: 0, signal: "SIGKILL", group: false },
    ]);
  });

  it("the grace is the one the tracker said (endGrace)", () => {
    const c = warmPool();
    c.feed({ kind: "endGrace", ms: 2500 });
    serve(c, "s1");
    c.take();
    c.feed({ kind: "endSession", sessionId: "s1", reason: null });
    assert.deepEqual(c.take()[1], { kind: "startTimer", timer: { name: "grace", worker: 0 }, ms: 2500 });
  });

  it("end_session of the waiting session: it waits no more, its lanes closed", () => {
    const c = new Clock();
    c.feed({ kind: "assign", sessionId: "s1", token: "t", route: "direct", lanePort: 0 });
    c.feed({ kind: "laneArrived", sessionId: "s1", lane: 4 });
    c.take();
    c.feed({ kind: "endSession", sessionId: "s1", reason: new FarmError("CANCELLED", "no lane") });
    assert.deepEqual(c.take(), [{ kind: "dropLane", lane: 4 }]);
    assert.equal(c.state.waiting, undefined);
  });

  it("end_session of a session its worker has not taken yet: that worker goes, the held lanes closed", () => {
    const c = warmPool();
    c.feed({ kind: "assign", sessionId: "s1", token: "t", route: "direct", lanePort: 0 });
    c.feed({ kind: "laneArrived", sessionId: "s1", lane: 6 });
    c.take();
    c.feed({ kind: "endSession", sessionId: "s1", reason: null });
    assert.deepEqual(c.take(), [
      { kind: "dropLane", lane: 6 },
      { kind: "countEnd", reason: "OK" },
      { kind: "kill", worker: 0, signal: "SIGKILL", group: false },
    ]);
  });

  it("the tracker went away: every serving worker is counted AGENT_LOST and killed", () => {
    const c = warmPool({ warm: 2 });
    serve(c, "s1");
    c.take();
    c.feed({ kind: "trackerLost" });
    assert.deepEqual(c.take(), [
      { kind: "countEnd", reason: "AGENT_LOST" },
      { kind: "kill", worker: 0, signal: "SIGKILL", group: false },
    ]);
    assert.equal(c.worker(1).state, "idle");
  });
});

describe("pool machine: the board's canary", () => {
  it("the canary timer asks the first idle worker that never loaded native code nor was asked, and is armed again", () => {
    const c = warmPool({ warm: 2, canaryIntervalMs: CANARY_MS });
    c.advance(CANARY_MS);
    assert.deepEqual(c.take(), [
      { kind: "startTimer", timer: { name: "canary" }, ms: CANARY_MS },
      { kind: "send", worker: 0, msg: { run_canary: {} } },
    ]);
    c.advance(CANARY_MS);
    assert.deepEqual(c.take()[1], { kind: "send", worker: 1, msg: { run_canary: {} } }, "worker 0 has not answered yet");
    c.advance(CANARY_MS);
    assert.deepEqual(c.take(), [{ kind: "startTimer", timer: { name: "canary" }, ms: CANARY_MS }], "nobody left to ask");
  });

  it("a canary verdict it was asked for is the board's health (if it ran)", () => {
    const c = warmPool({ canaryIntervalMs: CANARY_MS });
    c.advance(CANARY_MS);
    c.take();
    c.say(0, { kind: "canary", m: { ran: true, ok: false, detail: "wrong result", duration_ms: 12, kernel_ns: 0 } });
    assert.deepEqual(c.take(), [{ kind: "health", report: { kind: "canary", ok: false, reason: "wrong result", durationMs: 12, kernelNs: 0 } }]);
    assert.equal(c.worker(0).canaryAsked, false);
  });

  it('a starting worker\'s own canary (asked at its start) is accepted before its "ready"', () => {
    const c = new Clock();
    c.feed({ kind: "fill" });
    spawnAll(c, c.take());
    c.say(0, { kind: "canary", m: { ran: true, ok: true, detail: "", duration_ms: 5, kernel_ns: 300 } });
    assert.deepEqual(c.take(), [{ kind: "health", report: { kind: "canary", ok: true, reason: "", durationMs: 5, kernelNs: 300 } }]);
  });

  it("a verdict nobody asked for, or one from a worker that loaded native code, is a breach", () => {
    const c = warmPool();
    c.say(0, { kind: "canary", m: { ran: true, ok: true, detail: "", duration_ms: 1, kernel_ns: 0 } });
    const [cut] = c.take();
    assert.equal(cut?.kind === "cutOff" && cut.error.message, "the session's worker broke the agent's protocol: a canary verdict nobody asked for");
    const d = warmPool();
    serve(d, "s1");
    d.say(0, { kind: "foreign_code", m: { session_id: "s1" } });
    d.take();
    d.say(0, { kind: "canary", m: { ran: true, ok: true, detail: "", duration_ms: 1, kernel_ns: 0 } });
    const [cutD] = d.take();
    assert.equal(
      cutD?.kind === "cutOff" && cutD.error.message,
      "the session's worker broke the agent's protocol: a canary verdict from a worker that loaded a tenant's native code",
    );
  });
});

describe("pool machine: breaches (a worker says what it may not, or its channel breaks)", () => {
  it("a serving worker's breach: cut off, counted, its group killed, its session ended PROTOCOL_ERROR", () => {
    const c = warmPool();
    serve(c, "s1");
    c.take();
    c.say(0, { kind: "ended", m: { session_id: "s9", reusable: true, error: null } });
    const error = new FarmError("PROTOCOL_ERROR", "the session's worker broke the agent's protocol: ended for session s9, which it does not serve");
    assert.deepEqual(c.take(), [
      { kind: "cutOff", worker: 0, sessionId: "s1", state: "serving", error },
      { kind: "countEnd", reason: "PROTOCOL_ERROR" },
      { kind: "kill", worker: 0, signal: "SIGKILL", group: true },
      { kind: "sessionEnded", sessionId: "s1", reason: error },
    ]);
  });

  it('an idle worker\'s breach ends no session; "ready" twice is one', () => {
    const c = warmPool();
    c.say(0, ready);
    const error = new FarmError("PROTOCOL_ERROR", "the session's worker broke the agent's protocol: \"ready\" from a idle worker");
    assert.deepEqual(c.take(), [
      { kind: "cutOff", worker: 0, sessionId: undefined, state: "idle", error },
      { kind: "kill", worker: 0, signal: "SIGKILL", group: true },
    ]);
  });

  it("every message out of its scope is a breach", () => {
    const cases: Array<[WorkerMessage, string]> = [
      [{ kind: "foreign_code", m: { session_id: "s1" } }, "foreign_code for session s1, which it does not serve"],
      [{ kind: "lane_opened", m: { session_id: "s1", ticket: "" } }, "lane_opened for session s1, which it does not serve"],
      [{ kind: "counters", m: { calls: 1, time_evaluations: 0, errors: {} } }, "counters from a idle worker"],
      [{ kind: "lane_bytes", m: { session_id: "s1", to_board: 0, from_board: 0 } }, "lane_bytes for session s1, which it does not serve"],
      [{ kind: "store_keep", m: { id: 1, name: "f", sha256: "c".repeat(64) } }, "store_keep from a idle worker"],
      [ended("s1", true), "ended for session s1, which it does not serve"],
    ];
    for (const [msg, why] of cases) {
      const c = warmPool();
      c.say(0, msg);
      const [cut] = c.take();
      assert.equal(cut?.kind === "cutOff" && cut.error.message, `the session's worker broke the agent's protocol: ${why}`);
      assert.equal(c.worker(0).state, "exiting");
    }
    const c = warmPool();
    serve(c, "s1");
    c.take();
    c.say(0, { kind: "program_fpga", m: { id: 1, bitstream: "b", config: "c" } });
    const [cut] = c.take();
    assert.equal(cut?.kind === "cutOff" && cut.error.message, "the session's worker broke the agent's protocol: program_fpga on a cpu board");
  });

  it("a broken channel is a breach with the channel's error", () => {
    const c = warmPool();
    serve(c, "s1");
    c.feed({ kind: "endSession", sessionId: "s1", reason: null });
    c.take();
    const error = new FarmError("PROTOCOL_ERROR", "undecodable");
    c.feed({ kind: "channelBroken", worker: 0, error });
    assert.deepEqual(c.take(), [
      { kind: "cutOff", worker: 0, sessionId: "s1", state: "serving", error },
      { kind: "countEnd", reason: "PROTOCOL_ERROR" },
      { kind: "kill", worker: 0, signal: "SIGKILL", group: true },
      { kind: "cancelTimer", timer: { name: "grace", worker: 0 } },
      { kind: "sessionEnded", sessionId: "s1", reason: error },
    ]);
  });

  it("a lane the worker broke (the agent's grpc bridge cut it) is a breach with the lane's error", () => {
    const c = warmPool();
    serve(c, "s1");
    c.take();
    const error = new FarmError("PROTOCOL_ERROR", "the worker's end of a grpc lane: a frame of 1073741824 bytes is over the limit of 16777216");
    c.feed({ kind: "laneBroken", sessionId: "s1", error });
    assert.deepEqual(c.take(), [
      { kind: "cutOff", worker: 0, sessionId: "s1", state: "serving", error },
      { kind: "countEnd", reason: "PROTOCOL_ERROR" },
      { kind: "kill", worker: 0, signal: "SIGKILL", group: true },
      { kind: "sessionEnded", sessionId: "s1", reason: error },
    ]);
    assert.equal(c.worker(0).state, "exiting");
  });
});

describe("pool machine: exits", () => {
  const crash = new FarmError("RUNTIME_CRASH", "the session worker (pid 100) was killed by SIGSEGV", { details: { signal: "SIGSEGV" } });

  it("a serving worker that dies unexpectedly: reaped with its folder, its session ends with its death, a successor started", () => {
    const c = warmPool();
    serve(c, "s1");
    c.take();
    c.feed({ kind: "exited", worker: 0, code: null, signal: "SIGSEGV", death: crash });
    assert.deepEqual(c.take(), [
      { kind: "reap", worker: 0, folder: "s1" },
      { kind: "countEnd", reason: "RUNTIME_CRASH" },
      { kind: "sessionEnded", sessionId: "s1", reason: crash },
      { kind: "spawn", worker: 1 },
    ]);
    assert.equal(c.state.workers.length, 1);
  });

  it("a call timeout's death is the session's TIMEOUT", () => {
    const c = warmPool();
    serve(c, "s1");
    c.take();
    const timeout = new FarmError("TIMEOUT", "f ran past 100 ms; the session worker was killed and the board returned to the pool");
    c.feed({ kind: "exited", worker: 0, code: null, signal: "SIGKILL", death: timeout });
    assert.deepEqual(c.take().slice(1, 3), [
      { kind: "countEnd", reason: "TIMEOUT" },
      { kind: "sessionEnded", sessionId: "s1", reason: timeout },
    ]);
  });

  it("a starting or idle worker that dies: the board's infrastructure failed; a successor started", () => {
    const c = warmPool();
    c.feed({ kind: "exited", worker: 0, code: 1, signal: null, death: crash });
    assert.deepEqual(c.take(), [
      { kind: "reap", worker: 0, folder: undefined },
      {
        kind: "workerDied",
        worker: 0,
        code: 1,
        signal: null,
        report: { kind: "infra", ok: false, reason: "idle session worker 100 exited with code 1", durationMs: 0, kernelNs: 0 },
      },
      { kind: "spawn", worker: 1 },
    ]);
  });

  it("a worker the agent killed: reaped (with the folder it kept), no news; the board ready if a worker is idle and no session runs", () => {
    const c = warmPool({ warm: 1, ownUids: true });
    serve(c, "s1");
    c.say(0, ended("s1", false));
    c.take();
    c.feed({ kind: "spawned", worker: 1, pid: 101 });
    c.say(1, ready);
    assert.deepEqual(c.take(), [{ kind: "countReady", worker: 1 }, { kind: "boardReady" }, { kind: "prepareFolder", worker: 1 }]);
    c.feed({ kind: "exited", worker: 0, code: null, signal: "SIGKILL", death: crash });
    assert.deepEqual(c.take(), [{ kind: "reap", worker: 0, folder: "s1" }, { kind: "boardReady" }]);
  });

  it("an exit after close is no news and starts nothing", () => {
    const c = warmPool();
    c.feed({ kind: "close" });
    c.take();
    c.feed({ kind: "exited", worker: 0, code: null, signal: "SIGKILL", death: crash });
    assert.deepEqual(c.take(), [{ kind: "reap", worker: 0, folder: undefined }]);
  });
});

describe("pool machine: close", () => {
  it("kills and reaps every worker now, folders included, closes a waiting session's lanes, and starts nothing again", () => {
    const c = warmPool({ warm: 2, canaryIntervalMs: CANARY_MS });
    serve(c, "s1");
    c.feed({ kind: "endSession", sessionId: "s1", reason: null });
    c.take();
    c.feed({ kind: "close" });
    assert.deepEqual(c.take(), [
      { kind: "cancelTimer", timer: { name: "canary" } },
      { kind: "cancelTimer", timer: { name: "grace", worker: 0 } },
      { kind: "kill", worker: 0, signal: "SIGKILL", group: false },
      { kind: "reapNow", worker: 0, folder: "s1" },
      { kind: "kill", worker: 1, signal: "SIGKILL", group: false },
      { kind: "reapNow", worker: 1, folder: undefined },
      { kind: "removeLateFolders" },
    ]);
    assert.deepEqual(workerStates(c.state), { starting: 0, idle: 0, serving: 0, exiting: 2 });
    c.feed({ kind: "fill" });
    assert.deepEqual(c.take(), []);
  });

  it("closes the lanes of a session waiting for a worker", () => {
    const c = new Clock();
    c.feed({ kind: "assign", sessionId: "s1", token: "t", route: "direct", lanePort: 0 });
    c.feed({ kind: "laneArrived", sessionId: "s1", lane: 8 });
    c.take();
    c.feed({ kind: "close" });
    assert.deepEqual(c.take(), [
      { kind: "dropLane", lane: 8 },
      { kind: "kill", worker: 0, signal: "SIGKILL", group: false },
      { kind: "reapNow", worker: 0, folder: undefined },
      { kind: "removeLateFolders" },
    ]);
  });
});

describe("pool machine: what is ignored, and why", () => {
  it("anything a worker says once it is being killed", () => {
    const c = warmPool();
    serve(c, "s1");
    c.feed({ kind: "endSession", sessionId: "s1", reason: new FarmError("CANCELLED", "gone") });
    assert.match(ignoredWhy(c.say(0, ended("s1", true))), /being killed/);
    assert.match(ignoredWhy(c.feed({ kind: "channelBroken", worker: 0, error: new FarmError("PROTOCOL_ERROR", "x") })), /being killed/);
  });

  it("events for a worker that has gone", () => {
    const c = warmPool();
    c.feed({ kind: "exited", worker: 0, code: 0, signal: null, death: new FarmError("RUNTIME_CRASH", "x") });
    assert.match(ignoredWhy(c.say(0, ready)), /has gone/);
    assert.match(ignoredWhy(c.feed({ kind: "requestDone", worker: 0, reply: { store_kept: { id: 1 } } })), /has gone/);
    assert.match(ignoredWhy(c.feed({ kind: "exited", worker: 0, code: 0, signal: null, death: new FarmError("RUNTIME_CRASH", "x") })), /gone already/);
    assert.match(ignoredWhy(c.feed({ kind: "spawned", worker: 0, pid: 1 })), /has gone/);
  });

  it("a lane or an end for a session no worker of this board serves (another board's)", () => {
    const c = warmPool();
    assert.match(ignoredWhy(c.feed({ kind: "laneArrived", sessionId: "other", lane: 1 })), /no worker of board b1 serves session other/);
    assert.match(ignoredWhy(c.feed({ kind: "endSession", sessionId: "other", reason: null })), /no worker of board b1 serves session other/);
    assert.match(
      ignoredWhy(c.feed({ kind: "laneBroken", sessionId: "other", error: new FarmError("PROTOCOL_ERROR", "x") })),
      /no worker of board b1 serves session other/,
    );
  });

  it("a second clean end_session while the grace runs", () => {
    const c = warmPool();
    serve(c, "s1");
    c.feed({ kind: "endSession", sessionId: "s1", reason: null });
    assert.match(ignoredWhy(c.feed({ kind: "endSession", sessionId: "s1", reason: null })), /ending already/);
  });

  it("a timer that is not armed", () => {
    const c = warmPool();
    assert.match(ignoredWhy(c.feed({ kind: "timerFired", timer: { name: "grace", worker: 0 } })), /not armed/);
    assert.match(ignoredWhy(c.feed({ kind: "timerFired", timer: { name: "canary" } })), /not armed/);
  });

  it("standbyOpened for a worker that died meanwhile; outcomes nobody awaits", () => {
    const c = new Clock({ standby: true });
    c.feed({ kind: "fill" });
    spawnAll(c, c.take());
    c.say(0, ready);
    c.feed({ kind: "channelBroken", worker: 0, error: new FarmError("PROTOCOL_ERROR", "x") });
    assert.match(ignoredWhy(c.feed({ kind: "standbyOpened", worker: 0, port: 4100 })), /exiting/);
    assert.match(ignoredWhy(c.feed({ kind: "folderMade", worker: 0 })), /awaits no session folder/);
    assert.match(ignoredWhy(c.feed({ kind: "assignSent", worker: 0, delivered: true })), /was sent no assignment/);
  });

  it("a second close", () => {
    const c = warmPool();
    c.feed({ kind: "close" });
    assert.match(ignoredWhy(c.feed({ kind: "close" })), /closed already/);
  });
});
