/**
 * The tracker's lease as a pure machine (tracker/lease-machine.ts), on a fake
 * clock: the shell's timers are effects, so the clock here arms and disarms
 * them from the effects and `advance()` delivers `timerFired` when one is due.
 * The `describe` blocks follow docs/architecture.md, "One session lifecycle":
 * the tracker's state table, then its table of reasons, then the edges.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FarmError, type Route } from "../protos/index.ts";
import { begin, checkSocket, step, type LeaseEffect, type LeaseEvent, type LeaseMachineState, type LeaseStep, type TimerName } from "./lease-machine.ts";
import { MachineClock, ignoredWhy, refusal } from "../tests/helpers/machine-clock.ts";

/** What a TVM server's AgentControl says a lease whose lane never opened lacked (tracker/tvm/server.ts). */
const TVM_MISSING = "the TVM client did not connect to the TVM server";

const OPEN_MS = 10_000;
const SESSION_MS = 60_000;
const GRACE_MS = 1000;

/** One lease on a fake clock (tests/helpers/machine-clock.ts). */
class Clock extends MachineClock<LeaseMachineState, LeaseEvent, LeaseEffect, TimerName, LeaseStep> {
  constructor(opts: { route?: Route; tvm?: boolean; sessionTimeoutMs?: number } = {}) {
    super(
      {
        step,
        started: (e) => (e.kind === "startTimer" ? { timer: e.name, ms: e.ms } : undefined),
        cancelled: (e) => (e.kind === "cancelTimer" ? e.name : undefined),
        fired: (name) => ({ kind: "timerFired", name }),
        armed: (state) => state.timers,
        key: (name) => name,
      },
      begin({
        id: "s1",
        boardId: "b1",
        ...(opts.tvm ? { laneMissing: TVM_MISSING } : {}),
        route: opts.route ?? "grpc",
        timeouts: { openTimeoutMs: OPEN_MS, sessionTimeoutMs: opts.sessionTimeoutMs ?? SESSION_MS, endGraceMs: GRACE_MS },
      }),
    );
  }
}

/** A lease whose lane is open on `route`'s usual lane, its effects taken. */
function active(route: "grpc" | "relay" | "direct" | "tvm", sessionTimeoutMs = SESSION_MS): Clock {
  const c = new Clock({ route: route === "tvm" ? "direct" : route, tvm: route === "tvm", sessionTimeoutMs });
  c.feed({ kind: "hostAttached" });
  if (route === "grpc") c.feed({ kind: "workerStreamAttached" });
  else if (route === "relay") {
    c.feed({ kind: "socketArrived", role: "host" });
    c.feed({ kind: "socketArrived", role: "worker" });
  } else c.feed({ kind: "laneOpened", lane: route });
  assert.equal(c.state.phase, "active");
  c.take();
  return c;
}

function reasonOf(c: Clock): { code: string; message: string } | null {
  return c.state.reason && { code: c.state.reason.code, message: c.state.reason.message };
}

/** The end's effects for a lease with these parts, timers as listed. */
function endEffects(
  reason: FarmError | null,
  parts: { timers: TimerName[]; relay?: boolean; host?: boolean; workerStream?: boolean; sockets?: boolean },
): LeaseEffect[] {
  return [
    { kind: "notifyEnded" },
    ...parts.timers.map((name): LeaseEffect => ({ kind: "cancelTimer", name })),
    ...(parts.relay ? [{ kind: "stopRelay" } as const] : []),
    ...((parts.host ?? true) ? [{ kind: "sendEnd", reason } as const] : []),
    ...(parts.workerStream ? [{ kind: "finishWorkerStream", reason } as const] : []),
    ...(parts.sockets
      ? [{ kind: "closeSocket", role: "host", clean: reason === null } as const, { kind: "closeSocket", role: "worker", clean: reason === null } as const]
      : []),
    { kind: "handBack" },
  ];
}

describe("lease machine: granted (a request matched with a free board)", () => {
  it("arms the open timer and the session timer, and sends the grant when the host's stream comes", () => {
    const c = new Clock();
    assert.equal(c.state.phase, "granted");
    assert.deepEqual(c.take(), [
      { kind: "startTimer", name: "open", ms: OPEN_MS },
      { kind: "startTimer", name: "session", ms: SESSION_MS },
    ]);
    c.feed({ kind: "hostAttached" });
    assert.deepEqual(c.take(), [{ kind: "sendGrant" }]);
    assert.equal(c.state.phase, "granted");
  });

  it("arms no session timer when the session has no limit (0)", () => {
    const c = new Clock({ sessionTimeoutMs: 0 });
    assert.deepEqual(c.take(), [{ kind: "startTimer", name: "open", ms: OPEN_MS }]);
    c.feed({ kind: "hostAttached" });
    c.feed({ kind: "laneOpened", lane: "direct" });
    c.advance(24 * 3600_000);
    assert.equal(c.state.phase, "active");
  });
});

describe("lease machine: granted → active (the lane opens)", () => {
  it("grpc: the board's ServeSession stream and the host's stream are relayed; the open timer is cancelled", () => {
    const c = new Clock({ route: "grpc" });
    c.feed({ kind: "hostAttached" });
    c.take();
    c.feed({ kind: "workerStreamAttached" });
    assert.deepEqual(c.take(), [{ kind: "startRelay" }, { kind: "cancelTimer", name: "open" }, { kind: "notifyActive" }]);
    assert.equal(c.state.phase, "active");
    assert.equal(c.state.lane, "grpc");
  });

  it("grpc: a worker stream that comes before the host's stream waits for it", () => {
    const c = new Clock({ route: "grpc" });
    c.take();
    c.feed({ kind: "workerStreamAttached" });
    assert.deepEqual(c.take(), []);
    assert.equal(c.state.phase, "granted");
    c.feed({ kind: "hostAttached" });
    assert.deepEqual(c.take(), [{ kind: "sendGrant" }, { kind: "startRelay" }, { kind: "cancelTimer", name: "open" }, { kind: "notifyActive" }]);
    assert.equal(c.state.lane, "grpc");
  });

  for (const route of ["relay", "auto"] as const) {
    it(`${route}: both data-port sockets are joined when the second arrives, whichever comes first`, () => {
      for (const [first, second] of [
        ["host", "worker"],
        ["worker", "host"],
      ] as const) {
        const c = new Clock({ route });
        c.feed({ kind: "hostAttached" });
        c.take();
        c.feed({ kind: "socketArrived", role: first });
        assert.deepEqual(c.take(), []);
        assert.equal(c.state.phase, "granted");
        c.feed({ kind: "socketArrived", role: second });
        assert.deepEqual(c.take(), [{ kind: "joinSockets" }, { kind: "cancelTimer", name: "open" }, { kind: "notifyActive" }]);
        assert.equal(c.state.phase, "active");
        assert.equal(c.state.lane, "relay");
      }
    });
  }

  it("relay: both sockets before the host's stream: joined once it comes", () => {
    const c = new Clock({ route: "relay" });
    c.feed({ kind: "socketArrived", role: "host" });
    c.feed({ kind: "socketArrived", role: "worker" });
    assert.equal(c.state.phase, "granted");
    c.take();
    c.feed({ kind: "hostAttached" });
    assert.deepEqual(c.take(), [{ kind: "sendGrant" }, { kind: "joinSockets" }, { kind: "cancelTimer", name: "open" }, { kind: "notifyActive" }]);
  });

  for (const lane of ["direct", "tvm"] as const) {
    it(`${lane}: the lane the tracker does not carry opened (${lane === "direct" ? "the agent's LaneOpened" : "the TVM server stopped polling"})`, () => {
      const c = new Clock({ route: "direct", tvm: lane === "tvm" });
      c.feed({ kind: "hostAttached" });
      c.take();
      c.feed({ kind: "laneOpened", lane });
      assert.deepEqual(c.take(), [{ kind: "cancelTimer", name: "open" }, { kind: "notifyActive" }]);
      assert.equal(c.state.phase, "active");
      assert.equal(c.state.lane, lane);
    });
  }

  it("the open timer no longer fires once the lane opened", () => {
    const c = active("direct");
    assert.deepEqual(c.advance(OPEN_MS * 2), []);
    assert.equal(c.state.phase, "active");
  });
});

describe("lease machine: granted → ended CANCELLED (no lane within the open timeout)", () => {
  const cases: Array<{ name: string; route: Route; tvm?: boolean; feed: LeaseEvent[]; missing: string }> = [
    { name: "grpc, no worker stream", route: "grpc", feed: [{ kind: "hostAttached" }], missing: "the board's worker did not open its stream" },
    { name: "grpc, a worker stream but no host stream", route: "grpc", feed: [{ kind: "workerStreamAttached" }], missing: "the host sent nothing" },
    { name: "relay, nobody at the data port", route: "relay", feed: [{ kind: "hostAttached" }], missing: "the host did not reach the data port" },
    {
      name: "relay, the host's socket alone",
      route: "relay",
      feed: [{ kind: "hostAttached" }, { kind: "socketArrived", role: "host" }],
      missing: "the board's worker did not reach the data port",
    },
    {
      name: "auto, its fallback's host socket alone",
      route: "auto",
      feed: [{ kind: "hostAttached" }, { kind: "socketArrived", role: "host" }],
      missing: "the board's worker did not reach the data port",
    },
    { name: "auto, the direct lane never reported", route: "auto", feed: [{ kind: "hostAttached" }], missing: "the host did not reach the board's agent" },
    { name: "direct, never reported", route: "direct", feed: [{ kind: "hostAttached" }], missing: "the host did not reach the board's agent" },
    { name: "a TVM server's board", route: "direct", tvm: true, feed: [{ kind: "hostAttached" }], missing: "the TVM client did not connect to the TVM server" },
  ];
  for (const k of cases) {
    it(`${k.name}: the message names the side that did not come`, () => {
      const c = new Clock({ route: k.route, tvm: k.tvm ?? false });
      for (const e of k.feed) c.feed(e);
      c.take();
      assert.deepEqual(c.advance(OPEN_MS - 1), []);
      assert.equal(c.state.phase, "granted");
      c.advance(1);
      assert.equal(c.state.phase, "ended");
      assert.deepEqual(reasonOf(c), { code: "CANCELLED", message: `session s1 was released: its lane did not open within ${OPEN_MS} ms (${k.missing})` });
      const socket = c.state.sockets.host;
      const effects = c.take();
      assert.deepEqual(effects.slice(0, 2), [{ kind: "notifyEnded" }, { kind: "cancelTimer", name: "session" }]);
      assert.deepEqual(effects.at(-1), { kind: "handBack" });
      // An unjoined socket is cut at once (not a clean end).
      if (socket) assert.ok(effects.some((e) => e.kind === "closeSocket" && e.role === "host" && !e.clean));
      if (k.feed.some((e) => e.kind === "workerStreamAttached")) assert.ok(effects.some((e) => e.kind === "finishWorkerStream"));
    });
  }
});

describe("lease machine: ended (the host gets the end, the agent end_session, the sockets close)", () => {
  const reason = new FarmError("RUNTIME_CRASH", "worker died");
  it("grpc: listeners, timers, relay stopped, host's end, worker's stream finished, board handed back, in that order", () => {
    const c = active("grpc");
    c.feed({ kind: "end", reason });
    assert.deepEqual(c.take(), endEffects(reason, { timers: ["session"], relay: true, workerStream: true }));
  });

  it("relay, clean: both sockets close gently (ended, read to the peer's end)", () => {
    const c = active("relay");
    c.feed({ kind: "end", reason: null });
    assert.deepEqual(c.take(), endEffects(null, { timers: ["session"], sockets: true }));
  });

  it("relay, with a reason: both sockets are destroyed at once", () => {
    const c = active("relay");
    c.feed({ kind: "end", reason });
    assert.deepEqual(c.take(), endEffects(reason, { timers: ["session"], sockets: true }));
  });

  it("direct: nothing of the lane to close; the host's end and the board handed back", () => {
    const c = active("direct");
    c.feed({ kind: "end", reason: null });
    assert.deepEqual(c.take(), endEffects(null, { timers: ["session"] }));
  });

  it("keeps the lane it had, so the session's record names it", () => {
    const c = active("relay");
    c.feed({ kind: "end", reason: null });
    assert.equal(c.state.lane, "relay");
  });
});

describe("lease machine: the reasons an end carries (docs/architecture.md's reason table)", () => {
  it("host sent Close and the worker its clean end: grpc, seen by the relay → clean", () => {
    const c = active("grpc");
    c.feed({ kind: "workerGoodbye" });
    assert.equal(c.state.phase, "ended");
    assert.equal(c.state.reason, null);
    assert.deepEqual(c.take(), endEffects(null, { timers: ["session"], relay: true, workerStream: true }));
  });

  for (const lane of ["relay", "direct"] as const) {
    it(`host sent Close and the worker its clean end: ${lane}, the agent's session_ended without a reason → clean, even after the lane closed`, () => {
      const c = active(lane);
      c.feed({ kind: "laneClosed" });
      c.feed({ kind: "end", reason: null });
      assert.equal(c.state.phase, "ended");
      assert.equal(c.state.reason, null);
      // The grace timer it armed is cancelled with the rest.
      assert.ok(c.take().some((e) => e.kind === "cancelTimer" && e.name === "grace"));
      assert.deepEqual(c.advance(GRACE_MS * 10), []);
    });
  }

  it("ReleaseSession → clean", () => {
    const c = active("grpc");
    c.feed({ kind: "end", reason: null });
    assert.equal(c.state.reason, null);
  });

  it("the lease exceeded sessionTimeoutMs → SESSION_TIMEOUT, at the limit and not before", () => {
    const c = active("grpc");
    assert.deepEqual(c.advance(SESSION_MS - 1), []);
    const [fired] = c.advance(1);
    assert.equal(fired?.outcome, "applied");
    assert.deepEqual(reasonOf(c), {
      code: "SESSION_TIMEOUT",
      message: `session s1 exceeded its session timeout of ${SESSION_MS} ms; request a longer sessionTimeoutMs`,
    });
    // The timer that fired is not cancelled again; nothing else was armed.
    assert.deepEqual(c.take(), endEffects(c.state.reason, { timers: [], relay: true, workerStream: true }));
  });

  it("the session timeout applies before the lane opens too", () => {
    const c = new Clock({ route: "direct", sessionTimeoutMs: 5000 });
    c.feed({ kind: "hostAttached" });
    c.advance(5000);
    assert.equal(c.state.reason?.code, "SESSION_TIMEOUT");
  });

  it("no lane within the open timeout → CANCELLED (the rows above)", () => {
    const c = new Clock({ route: "grpc" });
    c.feed({ kind: "hostAttached" });
    c.advance(OPEN_MS);
    assert.equal(c.state.reason?.code, "CANCELLED");
  });

  for (const phase of ["granted", "active"] as const) {
    it(`the host's Session stream broke (its process died, or no keepalive answer) while ${phase} → CANCELLED`, () => {
      const c = phase === "active" ? active("relay") : new Clock({ route: "relay" });
      if (phase === "granted") c.feed({ kind: "hostAttached" });
      c.take();
      c.feed({ kind: "hostLeft" });
      assert.deepEqual(reasonOf(c), { code: "CANCELLED", message: "the host left session s1" });
      assert.ok(
        c.take().some((e) => e.kind === "sendEnd"),
        "the end is still written: a cancelled stream ignores it, a broken one may not be",
      );
    });
  }

  const told: Array<[string, FarmError]> = [
    ["the agent stream broke or missed its heartbeats", new FarmError("AGENT_LOST", "board b1 was lost: heartbeats missed")],
    ["the worker died, reported by its agent", new FarmError("RUNTIME_CRASH", "worker exited with signal SIGSEGV")],
    ["a call ran past its timeout, reported by its agent", new FarmError("TIMEOUT", "run() exceeded 1000 ms")],
    ["the tracker is shutting down", new FarmError("DRAINED", "the tracker is shutting down")],
    ["the host's token was revoked", new FarmError("UNAUTHENTICATED", "token 'h' was revoked")],
  ];
  for (const [why, reason] of told) {
    it(`${why} → ${reason.code}, the reason passed on as it came (to the host, the worker's stream)`, () => {
      const c = active("grpc");
      c.feed({ kind: "end", reason });
      assert.equal(c.state.reason, reason);
      assert.deepEqual(c.take(), endEffects(reason, { timers: ["session"], relay: true, workerStream: true }));
    });
  }

  for (const lane of ["grpc", "relay"] as const) {
    it(`${lane}: a lane closed and the agent said nothing within the grace → RUNTIME_CRASH "did not say why"`, () => {
      const c = active(lane);
      c.feed({ kind: "laneClosed" });
      assert.deepEqual(c.take(), [{ kind: "startTimer", name: "grace", ms: GRACE_MS }]);
      assert.equal(c.state.phase, "active");
      assert.deepEqual(c.advance(GRACE_MS - 1), []);
      c.advance(1);
      assert.deepEqual(reasonOf(c), {
        code: "RUNTIME_CRASH",
        message: `the session worker of board b1 went away and its agent did not say why within ${GRACE_MS} ms`,
      });
      const effects = c.take();
      assert.ok(!effects.some((e) => e.kind === "cancelTimer" && e.name === "grace"), "the fired timer is not cancelled");
      assert.ok(effects.some((e) => e.kind === "cancelTimer" && e.name === "session"));
    });
  }

  it("a lane closed and the agent's report came within the grace → the agent's reason, not the grace's", () => {
    const c = active("relay");
    c.feed({ kind: "laneClosed" });
    c.advance(GRACE_MS - 1);
    const crash = new FarmError("RUNTIME_CRASH", "worker exited with code 3");
    c.feed({ kind: "end", reason: crash });
    assert.equal(c.state.reason, crash);
    assert.deepEqual(c.advance(GRACE_MS), []);
  });
});

describe("lease machine: edges", () => {
  it("a second end is ignored: the first reason stands and nothing runs twice", () => {
    const c = active("grpc");
    c.feed({ kind: "end", reason: null });
    c.take();
    const again = c.feed({ kind: "end", reason: new FarmError("DRAINED", "late") });
    assert.match(ignoredWhy(again), /has ended; end comes after its end/);
    assert.equal(c.state.reason, null);
    assert.deepEqual(c.take(), []);
  });

  it("an end before the lane: no relay to stop, no stream or socket to close; the host still gets the end", () => {
    const c = new Clock({ route: "grpc" });
    c.feed({ kind: "hostAttached" });
    c.take();
    c.feed({ kind: "end", reason: null });
    assert.deepEqual(c.take(), endEffects(null, { timers: ["open", "session"] }));
    assert.equal(c.state.lane, undefined);
  });

  it("an end before the grant (the request had already ended): nothing sent to a host that is not there", () => {
    const c = new Clock({ route: "grpc" });
    c.take();
    c.feed({ kind: "end", reason: new FarmError("CANCELLED", "its request had already ended") });
    assert.deepEqual(c.take(), endEffects(c.state.reason, { timers: ["open", "session"], host: false }));
  });

  it("a grant after the end: the grant goes out, then at once the end, so the host's stream does not hang", () => {
    const c = new Clock({ route: "grpc" });
    const reason = new FarmError("UNAUTHENTICATED", "revoked");
    c.feed({ kind: "end", reason });
    c.take();
    c.feed({ kind: "hostAttached" });
    assert.deepEqual(c.take(), [{ kind: "sendGrant" }, { kind: "sendEnd", reason }]);
  });

  it("a lane after the end: LaneOpened is ignored; a worker stream and a socket are refused NOT_FOUND", () => {
    const c = new Clock({ route: "auto" });
    c.feed({ kind: "hostAttached" });
    c.feed({ kind: "end", reason: null });
    c.take();
    assert.match(ignoredWhy(c.feed({ kind: "laneOpened", lane: "direct" })), /has ended/);
    assert.equal(c.state.lane, undefined);
    assert.equal(refusal(c.feed({ kind: "socketArrived", role: "host" })).code, "NOT_FOUND");
    const grpc = new Clock({ route: "grpc" });
    grpc.feed({ kind: "end", reason: null });
    assert.deepEqual({ code: refusal(grpc.feed({ kind: "workerStreamAttached" })).code }, { code: "NOT_FOUND" });
    assert.deepEqual(c.take(), []);
  });

  it("the end's own closes come back as events and are ignored (sockets closing, the host's stream cancelled, the relay's half-close)", () => {
    const c = active("relay");
    c.feed({ kind: "end", reason: null });
    c.take();
    for (const e of [{ kind: "laneClosed" }, { kind: "hostLeft" }, { kind: "workerGoodbye" }, { kind: "timerFired", name: "grace" }] as const) {
      assert.match(ignoredWhy(c.feed(e)), /has ended/);
    }
    assert.equal(c.state.reason, null);
    assert.deepEqual(c.take(), []);
  });

  it("the session timeout during the grace (a lane closed, the report not in yet): SESSION_TIMEOUT, the grace timer cancelled", () => {
    const c = active("grpc", GRACE_MS * 3);
    c.advance(GRACE_MS * 3 - 10);
    c.feed({ kind: "laneClosed" });
    c.take();
    c.advance(10);
    assert.equal(c.state.reason?.code, "SESSION_TIMEOUT");
    assert.ok(c.take().some((e) => e.kind === "cancelTimer" && e.name === "grace"));
    assert.deepEqual(c.advance(GRACE_MS), []);
  });

  it("the tracker draining during the grace: DRAINED, both timers cancelled", () => {
    const c = active("relay");
    c.feed({ kind: "laneClosed" });
    c.take();
    c.feed({ kind: "end", reason: new FarmError("DRAINED", "shutting down") });
    const cancelled = c
      .take()
      .filter((e) => e.kind === "cancelTimer")
      .map((e) => (e as { name: TimerName }).name);
    assert.deepEqual(cancelled.sort(), ["grace", "session"]);
  });

  it("a second lane close during the grace is ignored: the grace is not restarted", () => {
    const c = active("relay");
    c.feed({ kind: "laneClosed" });
    c.advance(GRACE_MS / 2);
    assert.match(ignoredWhy(c.feed({ kind: "laneClosed" })), /already awaits its agent's report/);
    c.advance(GRACE_MS / 2);
    assert.equal(c.state.reason?.code, "RUNTIME_CRASH");
  });

  it("a lane that closes before it opened (one socket came and went) awaits the report too", () => {
    const c = new Clock({ route: "relay" });
    c.feed({ kind: "hostAttached" });
    c.feed({ kind: "socketArrived", role: "host" });
    c.feed({ kind: "laneClosed" });
    c.advance(GRACE_MS);
    assert.equal(c.state.reason?.code, "RUNTIME_CRASH");
    assert.ok(c.take().some((e) => e.kind === "closeSocket" && e.role === "host" && !e.clean));
  });

  it("LaneOpened once active is ignored (a TVM server's PUT opens, then ends)", () => {
    const c = active("tvm");
    assert.match(ignoredWhy(c.feed({ kind: "laneOpened", lane: "tvm" })), /open already \(lane tvm\)/);
    c.feed({ kind: "end", reason: null });
    assert.equal(c.state.lane, "tvm");
  });

  it("a timer that is not armed is ignored", () => {
    const c = active("grpc", 0);
    assert.match(ignoredWhy(c.feed({ kind: "timerFired", name: "open" })), /open timer of session s1 is not armed/);
    assert.match(ignoredWhy(c.feed({ kind: "timerFired", name: "session" })), /not armed/);
    assert.match(ignoredWhy(c.feed({ kind: "timerFired", name: "grace" })), /not armed/);
    assert.equal(c.state.phase, "active");
  });

  it("a second host stream is refused", () => {
    const c = new Clock();
    c.feed({ kind: "hostAttached" });
    assert.equal(refusal(c.feed({ kind: "hostAttached" })).code, "PROTOCOL_ERROR");
  });

  it("a worker stream off the grpc route, or a second one, is refused PROTOCOL_ERROR", () => {
    for (const route of ["relay", "direct", "auto"] as const) {
      const e = refusal(new Clock({ route }).feed({ kind: "workerStreamAttached" }));
      assert.deepEqual([e.code, e.message], ["PROTOCOL_ERROR", `session s1 travels on the ${route} route, not on gRPC streams`]);
    }
    const c = active("grpc");
    assert.deepEqual([refusal(c.feed({ kind: "workerStreamAttached" })).message], ["session s1 already has a worker stream"]);
  });
});

describe("lease machine: checkSocket (the data port asks before it welcomes a socket)", () => {
  const cases: Array<[string, () => LeaseMachineState, "host" | "worker", string | undefined]> = [
    ["relay, granted", () => new Clock({ route: "relay" }).state, "host", undefined],
    ["auto, granted", () => new Clock({ route: "auto" }).state, "worker", undefined],
    ["grpc route", () => new Clock({ route: "grpc" }).state, "host", "PROTOCOL_ERROR: session s1 travels on the grpc route, not through the data port"],
    ["direct route", () => new Clock({ route: "direct" }).state, "host", "PROTOCOL_ERROR: session s1 travels on the direct route, not through the data port"],
    [
      "auto, open on its direct lane",
      () => {
        const c = new Clock({ route: "auto" });
        c.feed({ kind: "hostAttached" });
        c.feed({ kind: "laneOpened", lane: "direct" });
        return c.state;
      },
      "host",
      "PERMISSION_DENIED: session s1 is open on its direct lane; its ticket is used",
    ],
    [
      "relay, the role's socket came already",
      () => {
        const c = new Clock({ route: "relay" });
        c.feed({ kind: "socketArrived", role: "worker" });
        return c.state;
      },
      "worker",
      "PERMISSION_DENIED: session s1 already has its worker lane; the ticket is used",
    ],
    ["relay, open: both roles used", () => active("relay").state, "host", "PERMISSION_DENIED: session s1 already has its host lane; the ticket is used"],
    [
      "ended",
      () => {
        const c = new Clock({ route: "relay" });
        c.feed({ kind: "end", reason: null });
        return c.state;
      },
      "host",
      "NOT_FOUND: session s1 has ended",
    ],
  ];
  for (const [name, state, role, expected] of cases) {
    it(`${name}: ${expected ?? "welcome"}`, () => {
      const s = state();
      const e = checkSocket(s, role);
      assert.equal(e && `${e.code}: ${e.message}`, expected);
      // socketArrived refuses with the very same error, and changes nothing.
      const r = step(s, { kind: "socketArrived", role });
      if (expected) assert.equal(`${refusal(r).code}: ${refusal(r).message}`, expected);
      else assert.equal(r.outcome, "applied");
    });
  }
});

describe("lease machine: every event in every state has a said outcome", () => {
  const events: LeaseEvent[] = [
    { kind: "hostAttached" },
    { kind: "hostLeft" },
    { kind: "workerStreamAttached" },
    { kind: "socketArrived", role: "host" },
    { kind: "laneOpened", lane: "direct" },
    { kind: "laneClosed" },
    { kind: "workerGoodbye" },
    { kind: "timerFired", name: "open" },
    { kind: "timerFired", name: "session" },
    { kind: "timerFired", name: "grace" },
    { kind: "end", reason: null },
  ];
  // a: applied, i: ignored, r: refused; in the order of `events`.
  const table: Array<[string, () => LeaseMachineState, string]> = [
    [
      "granted (grpc, host attached)",
      () => {
        const c = new Clock({ route: "grpc" });
        c.feed({ kind: "hostAttached" });
        return c.state;
      },
      "r a a r a a a a a i a",
    ],
    [
      "granted (relay, host attached)",
      () => {
        const c = new Clock({ route: "relay" });
        c.feed({ kind: "hostAttached" });
        return c.state;
      },
      "r a r a a a a a a i a",
    ],
    ["active (grpc)", () => active("grpc").state, "r a r r i a a i a i a"],
    ["active (relay)", () => active("relay").state, "r a r r i a a i a i a"],
    [
      "active (direct), awaiting the report",
      () => {
        const c = active("direct");
        c.feed({ kind: "laneClosed" });
        return c.state;
      },
      "r a r r i i a i a a a",
    ],
    [
      "ended, never granted",
      () => {
        const c = new Clock();
        c.feed({ kind: "end", reason: null });
        return c.state;
      },
      "a i r r i i i i i i i",
    ],
    [
      "ended (grpc)",
      () => {
        const c = active("grpc");
        c.feed({ kind: "end", reason: null });
        return c.state;
      },
      "r i r r i i i i i i i",
    ],
  ];
  for (const [name, state, expected] of table) {
    it(name, () => {
      const got = events.map((e) => step(state(), e).outcome[0]).join(" ");
      assert.equal(got, expected);
    });
  }
});
