/**
 * The host's session lifecycle as a pure machine (host-sdk/channel-machine.ts),
 * on a fake clock: the shell's timers are effects, so the clock here arms and
 * disarms them from the effects and `advance()` delivers `timerFired` when one
 * is due. The `describe` blocks follow the machine's transition table, state
 * by state, then the ends it settles with, then the edges.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FarmError, SESSION_END_GRACE_MS, type Route } from "../protos/index.ts";
import {
  DIAL_TIMEOUT_MS,
  LANE_DRAIN_MS,
  begin,
  ending,
  step,
  type ChannelEffect,
  type ChannelEvent,
  type ChannelMachineState,
  type ChannelStep,
  type GrantFacts,
  type TimerName,
} from "./channel-machine.ts";
import { MachineClock, ignoredWhy, refusal } from "../tests/helpers/machine-clock.ts";

const TRACKER = "10.0.0.1:7000";
const DIRECT_MS = 1000;
const GRACE_MS = 1000;
/** The closing wait a grant with GRACE_MS gives: twice the grace, and 1 s more. */
const CLOSING_MS = 2 * GRACE_MS + 1000;

/** One session on a fake clock (tests/helpers/machine-clock.ts). */
class Clock extends MachineClock<ChannelMachineState, ChannelEvent, ChannelEffect, TimerName, ChannelStep> {
  constructor() {
    super(
      {
        step,
        started: (e) => (e.kind === "startTimer" ? { timer: e.name, ms: e.ms } : undefined),
        cancelled: (e) => (e.kind === "cancelTimer" ? e.name : undefined),
        fired: (name) => ({ kind: "timerFired", name }),
        armed: (state) => state.timers,
        key: (name) => name,
      },
      begin({ tracker: TRACKER, directTimeoutMs: DIRECT_MS }),
    );
  }
}

function grant(route: Route, directAddress = "10.0.0.2:7001"): GrantFacts {
  return { route, boardId: "b1", directAddress, endGraceMs: GRACE_MS };
}

/** A session whose lane is open: grpc, or a socket lane (direct unless `relay`), its effects taken. */
function open(lane: "grpc" | "direct" | "relay"): Clock {
  const c = new Clock();
  c.feed({ kind: "granted", grant: grant(lane) });
  if (lane !== "grpc") c.feed({ kind: "dialed", lane });
  assert.equal(c.state.phase, "open");
  c.take();
  return c;
}

/** A socket lane's session that got the tracker's end while its lane was open. */
function draining(reason: FarmError | null = crashed()): Clock {
  const c = open("direct");
  c.feed({ kind: "trackerEnd", reason });
  assert.equal(c.state.phase, "draining");
  c.take();
  return c;
}

/** A socket lane's session whose lane closed without the worker's clean end. */
function closing(error: FarmError | null = null): Clock {
  const c = open("direct");
  c.feed({ kind: "laneClosed", error });
  assert.equal(c.state.phase, "closing");
  c.take();
  return c;
}

function crashed(): FarmError {
  return new FarmError("RUNTIME_CRASH", "the session worker died");
}

/** The effects that settle a session: timers cancelled, a socket lane's lane closed (if up) and stream ended, the handler run. */
function settleEffects(
  reason: FarmError | null,
  parts: { timers?: TimerName[]; socket?: boolean; laneUp?: boolean; before?: ChannelEffect[] } = {},
): ChannelEffect[] {
  return [
    ...(parts.before ?? []),
    ...(parts.timers ?? []).map((name): ChannelEffect => ({ kind: "cancelTimer", name })),
    ...(parts.socket && parts.laneUp ? [{ kind: "closeLane" } as const] : []),
    ...(parts.socket ? [{ kind: "endStream" } as const] : []),
    { kind: "settle", reason },
  ];
}

function reasonOf(c: Clock): { code: string; message: string } | null | undefined {
  const r = c.state.reason;
  return r && { code: r.code, message: r.message };
}

describe("channel machine: requesting (the Session stream waits in the key's queue)", () => {
  it("begins requesting, with nothing armed: the grant's wait is awaitGrant's", () => {
    const c = new Clock();
    assert.equal(c.state.phase, "requesting");
    assert.deepEqual(c.take(), []);
  });

  it("granted, grpc route → open at once: the grant, the stream read (its frames and the end), the lane delivered", () => {
    const c = new Clock();
    c.feed({ kind: "granted", grant: grant("grpc") });
    assert.equal(c.state.phase, "open");
    assert.equal(c.state.lane, "grpc");
    assert.deepEqual(c.take(), [{ kind: "deliverGrant" }, { kind: "readStream" }, { kind: "deliverLane", lane: "grpc", note: undefined }]);
  });

  it("granted, direct route → opening: the direct lane dialled within the dial timeout", () => {
    const c = new Clock();
    c.feed({ kind: "granted", grant: grant("direct") });
    assert.equal(c.state.phase, "opening");
    assert.deepEqual(c.take(), [{ kind: "deliverGrant" }, { kind: "dial", lane: "direct", timeoutMs: DIAL_TIMEOUT_MS }]);
  });

  it("granted, auto route → opening: the direct lane dialled within auto's direct timeout", () => {
    const c = new Clock();
    c.feed({ kind: "granted", grant: grant("auto") });
    assert.deepEqual(c.take(), [{ kind: "deliverGrant" }, { kind: "dial", lane: "direct", timeoutMs: DIRECT_MS }]);
  });

  it("granted, auto route, the agent serves no direct lane → opening: the relay dialled, the note says why", () => {
    const c = new Clock();
    c.feed({ kind: "granted", grant: grant("auto", "") });
    assert.equal(c.state.phase, "opening");
    assert.equal(c.state.lane, "relay");
    assert.deepEqual(c.take(), [{ kind: "deliverGrant" }, { kind: "dial", lane: "relay", timeoutMs: DIAL_TIMEOUT_MS }]);
    assert.equal(
      c.state.note,
      "the direct lane to  failed (board b1's agent serves no direct lane (started with --no-direct, or with TLS to its tracker and no --data-tls-cert)); fell back to the tracker's relay",
    );
  });

  it("granted, direct route, the agent serves no direct lane → closed: the stream cancelled, the open fails UNAVAILABLE", () => {
    const c = new Clock();
    c.feed({ kind: "granted", grant: grant("direct", "") });
    assert.equal(c.state.phase, "closed");
    const error = new FarmError(
      "UNAVAILABLE",
      "board b1's agent serves no direct lane (started with --no-direct, or with TLS to its tracker and no --data-tls-cert)",
    );
    assert.deepEqual(c.take(), [{ kind: "deliverGrant" }, { kind: "cancelStream" }, { kind: "failOpen", error }]);
  });

  it("granted, relay route → opening: the relay dialled", () => {
    const c = new Clock();
    c.feed({ kind: "granted", grant: grant("relay") });
    assert.deepEqual(c.take(), [{ kind: "deliverGrant" }, { kind: "dial", lane: "relay", timeoutMs: DIAL_TIMEOUT_MS }]);
  });

  it("the grant's wait is as long as the grant's grace says: twice it and 1 s (the default grace when it says 0)", () => {
    const c = new Clock();
    c.feed({ kind: "granted", grant: grant("direct") });
    assert.equal(c.state.closingWaitMs, CLOSING_MS);
    const d = new Clock();
    d.feed({ kind: "granted", grant: { ...grant("direct"), endGraceMs: 0 } });
    assert.equal(d.state.closingWaitMs, 2 * SESSION_END_GRACE_MS + 1000);
  });

  it("requestFailed (refused, deadline, not a grant) → closed: the request fails with its error", () => {
    const c = new Clock();
    const error = new FarmError("DEADLINE_EXCEEDED", "no board became free");
    c.feed({ kind: "requestFailed", error });
    assert.equal(c.state.phase, "closed");
    assert.equal(c.state.reason, error);
    assert.deepEqual(c.take(), [{ kind: "failRequest", error }]);
  });
});

describe("channel machine: opening (granted; the lane is dialled)", () => {
  for (const lane of ["direct", "relay"] as const) {
    it(`dialed (${lane}) → open: the stream read (the end), the lane read, the lane delivered`, () => {
      const c = new Clock();
      c.feed({ kind: "granted", grant: grant(lane) });
      c.take();
      c.feed({ kind: "dialed", lane });
      assert.equal(c.state.phase, "open");
      assert.equal(c.state.laneUp, true);
      assert.deepEqual(c.take(), [{ kind: "readStream" }, { kind: "readLane" }, { kind: "deliverLane", lane, note: undefined }]);
    });
  }

  it("dialFailed direct on the auto route → opening: the relay dialled; its open carries the note", () => {
    const c = new Clock();
    c.feed({ kind: "granted", grant: grant("auto") });
    c.take();
    c.feed({ kind: "dialFailed", lane: "direct", error: new FarmError("UNAVAILABLE", "connection refused") });
    assert.equal(c.state.phase, "opening");
    assert.deepEqual(c.take(), [{ kind: "dial", lane: "relay", timeoutMs: DIAL_TIMEOUT_MS }]);
    c.feed({ kind: "dialed", lane: "relay" });
    const note = "the direct lane to 10.0.0.2:7001 failed (connection refused); fell back to the tracker's relay";
    assert.deepEqual(c.take().at(-1), { kind: "deliverLane", lane: "relay", note });
  });

  const failures: Array<[string, Route, "direct" | "relay"]> = [
    ["direct route, the direct lane", "direct", "direct"],
    ["relay route, the relay", "relay", "relay"],
    ["auto route, its fallback relay", "auto", "relay"],
  ];
  for (const [name, route, lane] of failures) {
    it(`dialFailed (${name}) → closed: the stream cancelled (the lease goes back at once), the open fails with the dial's error`, () => {
      const c = new Clock();
      c.feed({ kind: "granted", grant: grant(route) });
      if (route === "auto") c.feed({ kind: "dialFailed", lane: "direct", error: new FarmError("UNAVAILABLE", "refused") });
      c.take();
      const error = new FarmError("PERMISSION_DENIED", "the ticket is used");
      c.feed({ kind: "dialFailed", lane, error });
      assert.equal(c.state.phase, "closed");
      assert.deepEqual(c.take(), [{ kind: "cancelStream" }, { kind: "failOpen", error }]);
    });
  }

  it("streamEnded while dialling: kept, and the open fails with it once the dial is done — dialed: the lane closed", () => {
    const c = new Clock();
    c.feed({ kind: "granted", grant: grant("direct") });
    c.take();
    const ended = new FarmError("CANCELLED", "Cancelled on client");
    assert.equal(c.feed({ kind: "streamEnded", error: ended, trackerGone: false }).outcome, "applied");
    assert.equal(c.state.phase, "opening");
    assert.deepEqual(c.take(), []);
    c.feed({ kind: "dialed", lane: "direct" });
    assert.equal(c.state.phase, "closed");
    assert.deepEqual(c.take(), [{ kind: "cancelStream" }, { kind: "closeLane" }, { kind: "failOpen", error: ended }]);
  });

  it("streamEnded while dialling, then dialFailed: the open fails with the stream's end, not the dial's", () => {
    const c = new Clock();
    c.feed({ kind: "granted", grant: grant("relay") });
    const ended = new FarmError("DRAINED", "the tracker is shutting down");
    c.feed({ kind: "streamEnded", error: ended, trackerGone: false });
    c.take();
    c.feed({ kind: "dialFailed", lane: "relay", error: new FarmError("UNAVAILABLE", "refused") });
    assert.deepEqual(c.take(), [{ kind: "cancelStream" }, { kind: "failOpen", error: ended }]);
  });

  it("auto falls back to the relay even after the stream ended; the relay's open then fails with that end", () => {
    const c = new Clock();
    c.feed({ kind: "granted", grant: grant("auto") });
    const ended = new FarmError("AGENT_LOST", "board b1 was lost");
    c.feed({ kind: "streamEnded", error: ended, trackerGone: false });
    c.feed({ kind: "dialFailed", lane: "direct", error: new FarmError("UNAVAILABLE", "refused") });
    c.take();
    c.feed({ kind: "dialed", lane: "relay" });
    assert.deepEqual(c.take(), [{ kind: "cancelStream" }, { kind: "closeLane" }, { kind: "failOpen", error: ended }]);
  });
});

describe("channel machine: open (frames flow)", () => {
  it("trackerEnd on the grpc lane → closed with its reason: the end comes after every frame, on the lane itself", () => {
    const c = open("grpc");
    const reason = crashed();
    c.feed({ kind: "trackerEnd", reason });
    assert.equal(c.state.phase, "closed");
    assert.deepEqual(c.take(), settleEffects(reason));
  });

  it("trackerEnd on a socket lane → draining: the drain timer armed, new requests refused", () => {
    const c = open("direct");
    assert.equal(ending(c.state), undefined);
    const reason = crashed();
    c.feed({ kind: "trackerEnd", reason });
    assert.equal(c.state.phase, "draining");
    assert.deepEqual(c.take(), [{ kind: "startTimer", name: "drain", ms: LANE_DRAIN_MS }]);
    assert.deepEqual(ending(c.state), { reason });
  });

  it("workerEnd on the lane: kept, nothing done (the lane's close says the session is over)", () => {
    const c = open("relay");
    c.feed({ kind: "workerEnd", reason: null });
    assert.equal(c.state.phase, "open");
    assert.equal(c.state.workerEnd, null);
    assert.deepEqual(c.take(), []);
  });

  for (const lane of ["direct", "relay"] as const) {
    it(`laneClosed after the worker's clean end (${lane}) → closed clean at once: the tracker's end is not waited for`, () => {
      const c = open(lane);
      c.feed({ kind: "workerEnd", reason: null });
      c.feed({ kind: "laneClosed", error: null });
      assert.equal(c.state.phase, "closed");
      assert.equal(c.state.reason, null);
      assert.deepEqual(c.take(), settleEffects(null, { socket: true }));
    });
  }

  it("laneClosed without the worker's clean end → closing: the closing wait armed (twice the grace + 1 s)", () => {
    const c = open("direct");
    c.feed({ kind: "laneClosed", error: null });
    assert.equal(c.state.phase, "closing");
    assert.deepEqual(c.take(), [{ kind: "startTimer", name: "closing", ms: CLOSING_MS }]);
  });

  it("laneClosed after a worker's end that carries a reason → closing too: only a clean end is the worker's to settle", () => {
    const c = open("direct");
    c.feed({ kind: "workerEnd", reason: crashed() });
    c.feed({ kind: "laneClosed", error: null });
    assert.equal(c.state.phase, "closing");
  });

  it("hostEnd: the host's side of the lane ends; still open", () => {
    for (const lane of ["grpc", "direct"] as const) {
      const c = open(lane);
      c.feed({ kind: "hostEnd" });
      assert.equal(c.state.phase, "open");
      assert.deepEqual(c.take(), [{ kind: "endOutput" }]);
    }
  });
});

describe("channel machine: closing (the lane closed without the worker's clean end)", () => {
  it("trackerEnd → closed with its reason; the closing wait cancelled", () => {
    const c = closing();
    const reason = crashed();
    c.feed({ kind: "trackerEnd", reason });
    assert.deepEqual(c.take(), settleEffects(reason, { timers: ["closing"], socket: true }));
    assert.deepEqual(c.advance(CLOSING_MS * 2), []);
  });

  it("trackerEnd clean → closed clean", () => {
    const c = closing();
    c.feed({ kind: "trackerEnd", reason: null });
    assert.equal(c.state.reason, null);
  });

  it("the closing wait passes → closed UNAVAILABLE: the tracker may be unreachable — at the wait and not before", () => {
    const c = closing();
    assert.deepEqual(c.advance(CLOSING_MS - 1), []);
    assert.equal(c.state.phase, "closing");
    c.advance(1);
    assert.deepEqual(reasonOf(c), {
      code: "UNAVAILABLE",
      message: `the session's direct lane closed and the tracker did not say why within ${CLOSING_MS} ms: it may be unreachable from this host (a network partition?)`,
    });
    // The timer that fired is not cancelled again; the lane is down already.
    assert.deepEqual(c.take(), settleEffects(c.state.reason!, { socket: true }));
  });

  it("the closing wait passes after the lane's own error → closed with that error", () => {
    const error = new FarmError("UNAVAILABLE", "the direct lane: read ECONNRESET");
    const c = closing(error);
    c.advance(CLOSING_MS);
    assert.equal(c.state.reason, error);
  });

  it("the closing wait passes after a worker's end with a reason → closed with the worker's reason", () => {
    const c = open("relay");
    const reason = new FarmError("TIMEOUT", "f ran past 100 ms");
    c.feed({ kind: "workerEnd", reason });
    c.feed({ kind: "laneClosed", error: new FarmError("UNAVAILABLE", "reset") });
    c.advance(CLOSING_MS);
    assert.equal(c.state.reason, reason);
  });
});

describe("channel machine: draining (the tracker's end came while the lane was open)", () => {
  it("laneClosed after the worker's clean end → closed clean; the drain cancelled", () => {
    const c = draining();
    c.feed({ kind: "workerEnd", reason: null });
    c.feed({ kind: "laneClosed", error: null });
    assert.equal(c.state.reason, null);
    assert.deepEqual(c.take(), settleEffects(null, { timers: ["drain"], socket: true }));
  });

  it("laneClosed without it → closed with the tracker's end: the answers before it were read first", () => {
    const reason = crashed();
    const c = draining(reason);
    c.feed({ kind: "laneClosed", error: null });
    assert.equal(c.state.reason, reason);
    assert.deepEqual(c.take(), settleEffects(reason, { timers: ["drain"], socket: true }));
    assert.deepEqual(c.advance(LANE_DRAIN_MS * 2), []);
  });

  it("the drain passes → closed with the tracker's end, the lane closed by this host — at LANE_DRAIN_MS and not before", () => {
    const reason = new FarmError("TIMEOUT", "the session's time is up");
    const c = draining(reason);
    assert.deepEqual(c.advance(LANE_DRAIN_MS - 1), []);
    c.advance(1);
    assert.equal(c.state.phase, "closed");
    assert.equal(c.state.reason, reason);
    assert.deepEqual(c.take(), settleEffects(reason, { socket: true, laneUp: true }));
  });

  it("a clean tracker's end drains the same way and settles clean", () => {
    const c = draining(null);
    assert.deepEqual(ending(c.state), { reason: null });
    c.advance(LANE_DRAIN_MS);
    assert.equal(c.state.reason, null);
  });
});

describe("channel machine: the Session stream broke without an end", () => {
  it("open (grpc), the connection broke → closed UNAVAILABLE: the tracker went away, and its lease with it", () => {
    const c = open("grpc");
    const error = new FarmError("UNAVAILABLE", "Connection dropped");
    c.feed({ kind: "streamEnded", error, trackerGone: true });
    assert.deepEqual(reasonOf(c), {
      code: "UNAVAILABLE",
      message: `the tracker at ${TRACKER} went away (Connection dropped) and its lease on this board with it: the board's agent ends the session too. Request a new session; a restarted tracker takes requests as soon as it listens`,
    });
    assert.equal(c.state.reason?.cause, error);
    assert.deepEqual(c.take(), settleEffects(c.state.reason!));
  });

  it("open (socket lane), a status with the tracker's code → closed with it as it is; the lane closed", () => {
    const c = open("direct");
    const error = new FarmError("DRAINED", "the tracker is shutting down");
    c.feed({ kind: "streamEnded", error, trackerGone: false });
    assert.equal(c.state.reason, error);
    assert.deepEqual(c.take(), settleEffects(error, { socket: true, laneUp: true }));
  });

  it("open, a clean status → closed clean", () => {
    const c = open("grpc");
    c.feed({ kind: "streamEnded", error: null, trackerGone: false });
    assert.equal(c.state.reason, null);
  });

  it("closing → closed with it: the end the lane's close waited for will not come", () => {
    const c = closing();
    const error = new FarmError("UNAVAILABLE", "Connection dropped");
    c.feed({ kind: "streamEnded", error, trackerGone: true });
    assert.equal(c.state.reason?.code, "UNAVAILABLE");
    assert.match(c.state.reason!.message, /^the tracker at 10\.0\.0\.1:7000 went away/);
    assert.deepEqual(c.take(), settleEffects(c.state.reason!, { timers: ["closing"], socket: true }));
  });

  it("draining: ignored — the tracker's end said why, and its status follows it", () => {
    const c = draining();
    assert.match(ignoredWhy(c.feed({ kind: "streamEnded", error: new FarmError("RUNTIME_CRASH", "x"), trackerGone: false })), /the tracker's end said why/);
  });
});

describe("channel machine: the host drops the session (abort)", () => {
  const cases: Array<[string, () => Clock, ChannelEffect[]]> = [
    [
      "requesting",
      () => new Clock(),
      [{ kind: "cancelStream" }, { kind: "failRequest", error: new FarmError("CANCELLED", "the session was dropped by this host") }],
    ],
    [
      "opening",
      () => {
        const c = new Clock();
        c.feed({ kind: "granted", grant: grant("direct") });
        c.take();
        return c;
      },
      [{ kind: "cancelStream" }, { kind: "failOpen", error: new FarmError("CANCELLED", "the session was dropped by this host") }],
    ],
    [
      "open (grpc)",
      () => open("grpc"),
      settleEffects(new FarmError("CANCELLED", "the session was dropped by this host"), { before: [{ kind: "cancelStream" }] }),
    ],
    [
      "open (direct)",
      () => open("direct"),
      settleEffects(new FarmError("CANCELLED", "the session was dropped by this host"), { before: [{ kind: "cancelStream" }], socket: true, laneUp: true }),
    ],
    [
      "closing",
      () => closing(),
      settleEffects(new FarmError("CANCELLED", "the session was dropped by this host"), {
        before: [{ kind: "cancelStream" }],
        timers: ["closing"],
        socket: true,
      }),
    ],
    [
      "draining",
      () => draining(),
      settleEffects(new FarmError("CANCELLED", "the session was dropped by this host"), {
        before: [{ kind: "cancelStream" }],
        timers: ["drain"],
        socket: true,
        laneUp: true,
      }),
    ],
  ];
  for (const [name, make, effects] of cases) {
    it(`${name} → closed CANCELLED: the stream cancelled first`, () => {
      const c = make();
      c.feed({ kind: "abort" });
      assert.equal(c.state.phase, "closed");
      assert.deepEqual(reasonOf(c), { code: "CANCELLED", message: "the session was dropped by this host" });
      assert.deepEqual(c.take(), effects);
    });
  }

  it("closed: the stream is cancelled, nothing else (a clean lane end did not wait for the tracker's)", () => {
    const c = open("direct");
    c.feed({ kind: "workerEnd", reason: null });
    c.feed({ kind: "laneClosed", error: null });
    c.take();
    c.feed({ kind: "abort" });
    assert.equal(c.state.reason, null);
    assert.deepEqual(c.take(), [{ kind: "cancelStream" }]);
  });

  it("closed while dialling: a lane that connects after all is closed at once", () => {
    const c = new Clock();
    c.feed({ kind: "granted", grant: grant("relay") });
    c.feed({ kind: "abort" });
    c.take();
    c.feed({ kind: "dialed", lane: "relay" });
    assert.deepEqual(c.take(), [{ kind: "closeLane" }]);
    assert.equal(c.state.phase, "closed");
  });
});

describe("channel machine: closed", () => {
  it("hostEnd after the close still ends the host's side (Session.close racing the end)", () => {
    const c = open("grpc");
    c.feed({ kind: "trackerEnd", reason: null });
    c.take();
    c.feed({ kind: "hostEnd" });
    assert.deepEqual(c.take(), [{ kind: "endOutput" }]);
  });

  it("keeps the lane it had and why it closed", () => {
    const c = draining();
    c.advance(LANE_DRAIN_MS);
    assert.equal(c.state.lane, "direct");
    assert.equal(c.state.reason?.code, "RUNTIME_CRASH");
  });
});

describe("channel machine: what is not a transition is said", () => {
  it("hostEnd before the lane opened is refused: no Session is made before it has", () => {
    const c = new Clock();
    assert.match(refusal(c.feed({ kind: "hostEnd" })).message, /while requesting, before it opened/);
    c.feed({ kind: "granted", grant: grant("direct") });
    assert.equal(refusal(c.feed({ kind: "hostEnd" })).code, "INTERNAL");
    c.feed({ kind: "dialFailed", lane: "direct", error: new FarmError("UNAVAILABLE", "refused") });
    assert.equal(refusal(c.feed({ kind: "hostEnd" })).code, "INTERNAL");
  });

  it("a second end while draining is ignored: the first one is the session's, and the drain is not re-armed", () => {
    const c = draining();
    assert.match(ignoredWhy(c.feed({ kind: "trackerEnd", reason: new FarmError("DRAINED", "x") })), /came already/);
    c.advance(LANE_DRAIN_MS);
    assert.equal(c.state.reason?.code, "RUNTIME_CRASH");
  });

  it("the stream's end while requesting is ignored: awaitGrant reads it and fails the request", () => {
    assert.match(ignoredWhy(new Clock().feed({ kind: "streamEnded", error: new FarmError("NO_BOARD", "x"), trackerGone: false })), /awaitGrant/);
  });

  it("a timer that is not armed is ignored (a drain once the lane closed)", () => {
    const c = draining();
    c.feed({ kind: "laneClosed", error: null });
    assert.match(ignoredWhy(c.feed({ kind: "timerFired", name: "drain" })), /closed/);
    assert.match(ignoredWhy(open("direct").feed({ kind: "timerFired", name: "closing" })), /not armed/);
  });

  it("after the close, the tracker's end and the stream's status are ignored", () => {
    const c = open("direct");
    c.feed({ kind: "workerEnd", reason: null });
    c.feed({ kind: "laneClosed", error: null });
    assert.match(ignoredWhy(c.feed({ kind: "trackerEnd", reason: null })), /after its close/);
    assert.match(ignoredWhy(c.feed({ kind: "streamEnded", error: null, trackerGone: false })), /after its close/);
  });

  it("a second laneClosed is ignored", () => {
    const c = closing();
    assert.match(ignoredWhy(c.feed({ kind: "laneClosed", error: null })), /closed already/);
  });

  const events: ChannelEvent[] = [
    { kind: "granted", grant: grant("direct") },
    { kind: "requestFailed", error: new FarmError("NO_BOARD", "x") },
    { kind: "dialed", lane: "direct" },
    { kind: "dialFailed", lane: "direct", error: new FarmError("UNAVAILABLE", "x") },
    { kind: "trackerEnd", reason: null },
    { kind: "streamEnded", error: new FarmError("UNAVAILABLE", "x"), trackerGone: true },
    { kind: "workerEnd", reason: null },
    { kind: "laneClosed", error: null },
    { kind: "timerFired", name: "closing" },
    { kind: "timerFired", name: "drain" },
    { kind: "hostEnd" },
    { kind: "abort" },
  ];
  // a: applied, i: ignored, r: refused; in the order of `events`.
  const table: Array<[string, () => ChannelMachineState, string]> = [
    ["requesting", () => new Clock().state, "a a i i i i i i i i r a"],
    [
      "opening",
      () => {
        const c = new Clock();
        c.feed({ kind: "granted", grant: grant("direct") });
        return c.state;
      },
      "i i a a i a i i i i r a",
    ],
    ["open (grpc)", () => open("grpc").state, "i i i i a a i i i i a a"],
    ["open (direct)", () => open("direct").state, "i i i i a a a a i i a a"],
    ["closing", () => closing().state, "i i i i a a i i a i a a"],
    ["draining", () => draining().state, "i i i i i i a a i a a a"],
    [
      "closed (opened)",
      () => {
        const c = open("grpc");
        c.feed({ kind: "trackerEnd", reason: null });
        return c.state;
      },
      "i i a i i i i i i i a a",
    ],
    [
      "closed (never granted)",
      () => {
        const c = new Clock();
        c.feed({ kind: "requestFailed", error: new FarmError("NO_BOARD", "x") });
        return c.state;
      },
      "i i a i i i i i i i r a",
    ],
  ];
  for (const [name, state, expected] of table) {
    it(`every event in ${name} has a said outcome`, () => {
      const got = events.map((e) => step(state(), e).outcome[0]).join(" ");
      assert.equal(got, expected);
    });
  }
});
