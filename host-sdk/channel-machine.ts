/**
 * The host's side of the session lifecycle as a pure state machine:
 * `step(state, event)` → the next state and the effects, as data. Nothing
 * here reads a clock, arms a timer or touches a stream or a socket:
 * host-sdk/frame-channel.ts (SessionChannel) is the shell that owns those,
 * feeds what happens into `step` and performs what comes back. The tracker's
 * side is tracker/lease-machine.ts; docs/architecture.md ("One session
 * lifecycle") has both tables and the reasons an end may carry.
 *
 * The Session stream (at the tracker) carries the grant first and the
 * tracker's end last; the lane carries the frames — that same stream (grpc
 * route), or a socket to the agent (direct) or through the tracker's data
 * port (relay), which ends with the worker's clean end when the host closed
 * the session. The two are separate connections: either may say first that
 * the session is over.
 *
 * Transitions (every row is a spec in channel-machine.spec.ts):
 *
 * | state                | event                                        | → state      | effects |
 * |----------------------|----------------------------------------------|--------------|---------|
 * | (new)                | `begin`                                      | `requesting` | — (the grant's wait is awaitGrant's, which reads the stream's first message) |
 * | `requesting`         | `granted`, grpc route                        | `open`       | deliver the grant, read the stream (frames and the end), deliver the lane |
 * | `requesting`         | `granted`, direct/auto route                 | `opening`    | deliver the grant, dial the direct lane (auto: within its direct timeout) |
 * | `requesting`         | `granted`, auto route, the agent serves no direct lane | `opening` | deliver the grant, dial the relay, noting why |
 * | `requesting`         | `granted`, direct route, the agent serves no direct lane | `closed` | deliver the grant, cancel the stream, fail the open UNAVAILABLE |
 * | `requesting`         | `granted`, relay route                       | `opening`    | deliver the grant, dial the relay |
 * | `requesting`         | `requestFailed` (refused, deadline, not a grant) | `closed` | fail the request with its error |
 * | `opening`            | `streamEnded` (the lease ended while dialling) | `opening`  | — (kept: the open fails with it once the dial is done) |
 * | `opening`            | `dialed`                                     | `open`       | read the stream (the end), read the lane, deliver the lane (and auto's note) |
 * | `opening`            | `dialed` after the stream ended              | `closed`     | cancel the stream, close the lane, fail the open with the stream's end |
 * | `opening`            | `dialFailed` direct, auto route              | `opening`    | dial the relay, noting why |
 * | `opening`            | `dialFailed` (else)                          | `closed`     | cancel the stream, fail the open with the stream's end, else the dial's error |
 * | `open`               | `trackerEnd` (grpc lane: in order with the frames) | `closed` | settle with its reason |
 * | `open`               | `trackerEnd` (socket lane)                   | `draining`   | start `drain` (LANE_DRAIN_MS): the worker's last answers may still be on the lane; new requests are refused |
 * | `open`/`draining`    | `workerEnd` (the worker's end frame on the lane) | same     | — (kept: the lane's close says the session is over) |
 * | `open`               | `laneClosed` after the worker's clean end    | `closed`     | settle clean: the tracker's end is not waited for |
 * | `open`               | `laneClosed` without it                      | `closing`    | start `closing` (twice the grace + 1 s): the tracker's end says why |
 * | `closing`            | `trackerEnd`                                 | `closed`     | settle with its reason |
 * | `closing`            | `timerFired` `closing`                       | `closed`     | settle with the worker's end if it sent one, else the lane's error, else UNAVAILABLE (the tracker may be unreachable) |
 * | `draining`           | `laneClosed` after the worker's clean end    | `closed`     | settle clean |
 * | `draining`           | `laneClosed` without it                      | `closed`     | settle with the tracker's end |
 * | `draining`           | `timerFired` `drain`                         | `closed`     | settle with the tracker's end, the lane closed |
 * | `open`/`closing`     | `streamEnded` (a status with no end frame before it) | `closed` | settle with it; UNAVAILABLE "the tracker at ADDR went away" when the connection broke |
 * | any but `closed`     | `abort` (the host drops the session)         | `closed`     | cancel the stream, then as any end: CANCELLED |
 * | `open`/`closing`/`draining`/`closed` | `hostEnd` (no more frames from the host) | same | end the host's side of the lane |
 * | `closed`             | `dialed` (the dial outlived an abort)        | `closed`     | close the lane |
 * | `closed`             | `abort`                                      | `closed`     | cancel the stream (a clean lane end does not wait for the tracker's) |
 *
 * Settling an open session is one list of effects, in this order: cancel
 * every armed timer, close the lane if it is still open, end the Session
 * stream's writes (socket lanes: the lease is over, nothing more goes out on
 * it), run the close handler with the reason. Before the lane opens there is
 * no close handler: the request or the open fails instead.
 *
 * What is not a transition is said, not fallen through (`ignored` with why,
 * or `refused` with the FarmError the caller gets):
 *
 * - ignored: the stream's end while requesting (awaitGrant reads it and
 *   fails the request); a clean status or a second end while opening; a
 *   second `trackerEnd` while draining; `streamEnded` while draining (the
 *   tracker's end said why: its status follows it); any lane event before
 *   the lane is dialled, or once it closed; a timer that is not armed; any
 *   other event once `closed`;
 * - refused: `hostEnd` on a session whose lane never opened (there is no
 *   lane to end: the Session is made once it has).
 *
 * `ending(state)` is the refusal of new requests: once the tracker's end
 * came, a session takes none, even while it still drains (multiplexer.ts).
 */
import { FarmError, SESSION_END_GRACE_MS, type Lane, type Route } from "../protos/index.ts";
import { LANE_DRAIN_MS } from "../protos/gen/contract.ts";

export type ChannelPhase = "requesting" | "opening" | "open" | "closing" | "draining" | "closed";
/** The lanes the host dials; grpc is the Session stream itself. */
export type DialedLane = "direct" | "relay";

/** How long the lane is read after the tracker's end came, for frames the worker sent before it ended (declared for both SDKs). */
export { LANE_DRAIN_MS };
/** How long a lane may take to connect and be welcomed, unless auto's direct timeout is shorter. */
export const DIAL_TIMEOUT_MS = 10_000;

/** The shell's timers, by name: `closing` (the tracker's end after the lane closed), `drain` (the lane after the tracker's end). */
export type TimerName = "closing" | "drain";

/** What the machine is told at its start: only what its messages and choices read. */
export interface ChannelConfig {
  /** The tracker's address (HOST:PORT), for the end of a tracker that went away. */
  readonly tracker: string;
  /** auto: how long the direct lane may take (connect and welcome) before the relay is tried. */
  readonly directTimeoutMs: number;
}

/** What of the grant the lifecycle reads. */
export interface GrantFacts {
  readonly route: Route;
  readonly boardId: string;
  /** HOST:PORT of the board's agent's direct lane; "": it serves none. */
  readonly directAddress: string;
  /** The session end grace the tracker uses (0: the default, SESSION_END_GRACE_MS). */
  readonly endGraceMs: number;
}

export interface ChannelMachineState {
  readonly config: ChannelConfig;
  readonly phase: ChannelPhase;
  /** From the grant on. */
  readonly grant: GrantFacts | undefined;
  /** The lane being dialled, then open; stays after the close (it says which lane the session had). */
  readonly lane: Lane | undefined;
  /** auto: why it fell back to the relay. */
  readonly note: string | undefined;
  /** How long `closing` waits for the tracker's end: the tracker settles within its grace, and the end then travels here; twice over, and 1 s more. */
  readonly closingWaitMs: number;
  /** The Session stream's end while the lane was dialled: the open fails with it. */
  readonly endedWhileOpening: FarmError | undefined;
  /** The lane opened (a Session was made on it); stays after the close. */
  readonly opened: boolean;
  /** The lane socket is connected and has not closed: a close ends it. */
  readonly laneUp: boolean;
  /** The lane's own error when it closed (null: its peer closed it). */
  readonly laneError: FarmError | null;
  /** The worker's end frame on the lane: null clean; undefined none came. */
  readonly workerEnd: FarmError | null | undefined;
  /** The tracker's end frame on the Session stream: null clean; undefined none came. */
  readonly trackerEnd: FarmError | null | undefined;
  /** Why it closed (null: cleanly); undefined while not closed. */
  readonly reason: FarmError | null | undefined;
  /** The timers armed now, so that the close cancels exactly these and a stale one is recognised. */
  readonly timers: readonly TimerName[];
}

export type ChannelEvent =
  /** The Session stream's first message was a grant (awaitGrant). */
  | { readonly kind: "granted"; readonly grant: GrantFacts }
  /** The request failed before a grant: the tracker's refusal, its deadline, a first message that was not a grant. */
  | { readonly kind: "requestFailed"; readonly error: FarmError }
  /** A lane connected and was welcomed. */
  | { readonly kind: "dialed"; readonly lane: DialedLane }
  /** A lane could not be opened: refused, unreachable, no welcome in time. */
  | { readonly kind: "dialFailed"; readonly lane: DialedLane; readonly error: FarmError }
  /** The tracker's end frame on the Session stream: null clean. */
  | { readonly kind: "trackerEnd"; readonly reason: FarmError | null }
  /** The Session stream's status or error (null: a clean status); `trackerGone`: grpc-js made it up, the connection to the tracker broke. */
  | { readonly kind: "streamEnded"; readonly error: FarmError | null; readonly trackerGone: boolean }
  /** The worker's end frame on a socket lane: null clean. */
  | { readonly kind: "workerEnd"; readonly reason: FarmError | null }
  /** The lane socket closed: null its peer closed it, else its error. */
  | { readonly kind: "laneClosed"; readonly error: FarmError | null }
  /** One of the shell's timers went off. */
  | { readonly kind: "timerFired"; readonly name: TimerName }
  /** The host sends no more frames (Session.close, after its Close request). */
  | { readonly kind: "hostEnd" }
  /** The host drops the session now. */
  | { readonly kind: "abort" };

/** What the shell does for the machine; each says what it is for. */
export type ChannelEffect =
  /** Arm a timer; when it goes off the shell feeds `timerFired` with its name. */
  | { readonly kind: "startTimer"; readonly name: TimerName; readonly ms: number }
  /** Disarm a timer that is no longer wanted. */
  | { readonly kind: "cancelTimer"; readonly name: TimerName }
  /** The request is granted: its caller gets the grant. */
  | { readonly kind: "deliverGrant" }
  /** The request failed: its caller gets `error` (and the open fails with it too). */
  | { readonly kind: "failRequest"; readonly error: FarmError }
  /** Connect a lane and say the hello; the shell feeds `dialed` or `dialFailed`. */
  | { readonly kind: "dial"; readonly lane: DialedLane; readonly timeoutMs: number }
  /** Read the Session stream from here on: its frames (grpc lane) and the tracker's end, then its status. */
  | { readonly kind: "readStream" }
  /** Read the lane: its frames, the worker's end, its close. */
  | { readonly kind: "readLane" }
  /** The lane is open: the Session is made on it. */
  | { readonly kind: "deliverLane"; readonly lane: Lane; readonly note: string | undefined }
  /** The lane did not open, or the lease ended while it did: the request fails with `error`. */
  | { readonly kind: "failOpen"; readonly error: FarmError }
  /** Cancel the Session stream: the tracker ends the lease (CANCELLED "the host left") at once rather than at its open timeout. */
  | { readonly kind: "cancelStream" }
  /** No more frames from the host: end the lane's writes (grpc: the stream's). */
  | { readonly kind: "endOutput" }
  /** End the lane socket (its peer's close follows). */
  | { readonly kind: "closeLane" }
  /** End the Session stream's writes: the lease is over, nothing more goes out on it. */
  | { readonly kind: "endStream" }
  /** The session is over: the close handler runs, once, with the reason (null clean). */
  | { readonly kind: "settle"; readonly reason: FarmError | null };

export type ChannelStep =
  | { readonly outcome: "applied"; readonly state: ChannelMachineState; readonly effects: readonly ChannelEffect[] }
  /** Nothing changes; `why` says why the event has no effect here. */
  | { readonly outcome: "ignored"; readonly state: ChannelMachineState; readonly effects: readonly []; readonly why: string }
  /** Nothing changes; the caller gets `error` (the shell throws it). */
  | { readonly outcome: "refused"; readonly state: ChannelMachineState; readonly effects: readonly []; readonly error: FarmError };

/** A new session: `requesting`, its Session stream waiting in the key's queue. */
export function begin(config: ChannelConfig): { state: ChannelMachineState; effects: ChannelEffect[] } {
  return {
    state: {
      config,
      phase: "requesting",
      grant: undefined,
      lane: undefined,
      note: undefined,
      closingWaitMs: 0,
      endedWhileOpening: undefined,
      opened: false,
      laneUp: false,
      laneError: null,
      workerEnd: undefined,
      trackerEnd: undefined,
      reason: undefined,
      timers: [],
    },
    effects: [],
  };
}

export function step(state: ChannelMachineState, event: ChannelEvent): ChannelStep {
  switch (state.phase) {
    case "requesting":
      return requesting(state, event);
    case "opening":
      return opening(state, event);
    case "closed":
      return closed(state, event);
    default:
      return lanePhase(state, event);
  }
}

/** The tracker's end once it came (draining, or after): the session takes no new request. */
export function ending(state: ChannelMachineState): { reason: FarmError | null } | undefined {
  return state.trackerEnd === undefined ? undefined : { reason: state.trackerEnd };
}

function requesting(state: ChannelMachineState, event: ChannelEvent): ChannelStep {
  switch (event.kind) {
    case "granted":
      return granted(state, event.grant);
    case "requestFailed":
      return applied({ ...state, phase: "closed", reason: event.error }, [{ kind: "failRequest", error: event.error }]);
    case "abort": {
      const error = dropped();
      return applied({ ...state, phase: "closed", reason: error }, [{ kind: "cancelStream" }, { kind: "failRequest", error }]);
    }
    case "streamEnded":
      return ignored(state, "the Session stream ended before its grant: awaitGrant reads that and fails the request");
    case "hostEnd":
      return refused(state, notOpen(state));
    case "timerFired":
      return notArmed(state, event.name);
    default:
      return ignored(state, `no lane is dialled before the grant; ${event.kind} cannot come yet`);
  }
}

function granted(state: ChannelMachineState, grant: GrantFacts): ChannelStep {
  const next: ChannelMachineState = { ...state, grant, closingWaitMs: 2 * (grant.endGraceMs || SESSION_END_GRACE_MS) + 1000 };
  const deliver: ChannelEffect = { kind: "deliverGrant" };
  switch (grant.route) {
    case "grpc":
      return applied({ ...next, phase: "open", lane: "grpc", opened: true }, [
        deliver,
        { kind: "readStream" },
        { kind: "deliverLane", lane: "grpc", note: undefined },
      ]);
    case "relay":
      return applied({ ...next, phase: "opening", lane: "relay" }, [deliver, { kind: "dial", lane: "relay", timeoutMs: DIAL_TIMEOUT_MS }]);
    case "direct":
    case "auto": {
      if (grant.directAddress) {
        const timeoutMs = grant.route === "auto" ? state.config.directTimeoutMs : DIAL_TIMEOUT_MS;
        return applied({ ...next, phase: "opening", lane: "direct" }, [deliver, { kind: "dial", lane: "direct", timeoutMs }]);
      }
      const error = new FarmError(
        "UNAVAILABLE",
        `board ${grant.boardId}'s agent serves no direct lane (started with --no-direct, or with TLS to its tracker and no --data-tls-cert)`,
      );
      if (grant.route === "auto") return fallBack(next, error, [deliver]);
      return applied({ ...next, phase: "closed", reason: error }, [deliver, { kind: "cancelStream" }, { kind: "failOpen", error }]);
    }
  }
}

/** auto: the direct lane failed; the relay is dialled, and the session will say why it got the relay. */
function fallBack(state: ChannelMachineState, error: FarmError, effects: ChannelEffect[]): ChannelStep {
  const note = `the direct lane to ${state.grant?.directAddress ?? ""} failed (${error.message}); fell back to the tracker's relay`;
  return applied({ ...state, phase: "opening", lane: "relay", note }, [...effects, { kind: "dial", lane: "relay", timeoutMs: DIAL_TIMEOUT_MS }]);
}

function opening(state: ChannelMachineState, event: ChannelEvent): ChannelStep {
  switch (event.kind) {
    case "dialed": {
      const ended = state.endedWhileOpening;
      if (ended)
        return applied({ ...state, phase: "closed", reason: ended }, [{ kind: "cancelStream" }, { kind: "closeLane" }, { kind: "failOpen", error: ended }]);
      return applied({ ...state, phase: "open", opened: true, laneUp: true }, [
        { kind: "readStream" },
        { kind: "readLane" },
        { kind: "deliverLane", lane: event.lane, note: state.note },
      ]);
    }
    case "dialFailed": {
      if (event.lane === "direct" && state.grant?.route === "auto") return fallBack(state, event.error, []);
      const error = state.endedWhileOpening ?? event.error;
      return applied({ ...state, phase: "closed", reason: error }, [{ kind: "cancelStream" }, { kind: "failOpen", error }]);
    }
    case "streamEnded":
      if (event.error === null) return ignored(state, "a clean status while the lane is dialled: the tracker's end is read once it opens");
      if (state.endedWhileOpening) return ignored(state, "the Session stream already ended while the lane was dialled");
      return applied({ ...state, endedWhileOpening: event.error }, []);
    case "abort": {
      const error = dropped();
      return applied({ ...state, phase: "closed", reason: error }, [{ kind: "cancelStream" }, { kind: "failOpen", error }]);
    }
    case "hostEnd":
      return refused(state, notOpen(state));
    case "timerFired":
      return notArmed(state, event.name);
    case "granted":
    case "requestFailed":
      return ignored(state, "the request was granted already");
    default:
      return ignored(state, `the ${state.lane} lane is still being dialled: the stream is not read yet, and ${event.kind} cannot come`);
  }
}

/** `open`, `closing`, `draining`: the lane opened. */
function lanePhase(state: ChannelMachineState, event: ChannelEvent): ChannelStep {
  const { phase } = state;
  switch (event.kind) {
    case "trackerEnd":
      if (phase === "draining") return ignored(state, "the tracker's end came already: the lane drains");
      // grpc: the end comes on the lane itself, after every frame; closing: the lane closed and the end says why.
      if (state.lane === "grpc" || phase === "closing") return settle(state, event.reason);
      // The lane and the Session stream are two connections: the end of a worker that crashed can overtake the
      // answer it sent just before, which this host has not read yet. That answer belongs to its request, not to
      // the crash: read the lane to its close (the worker is gone, or its agent ends it) before ending.
      return applied({ ...state, phase: "draining", trackerEnd: event.reason, timers: [...state.timers, "drain"] }, [
        { kind: "startTimer", name: "drain", ms: LANE_DRAIN_MS },
      ]);
    case "streamEnded":
      if (phase === "draining") return ignored(state, "the tracker's end said why; the stream's status follows it");
      return settle(state, event.trackerGone && event.error ? trackerGone(state, event.error) : event.error);
    case "workerEnd":
      if (!state.laneUp) return ignored(state, "the lane has closed");
      return applied({ ...state, workerEnd: event.reason }, []);
    case "laneClosed": {
      if (!state.laneUp) return ignored(state, "the lane closed already");
      const down: ChannelMachineState = { ...state, laneUp: false, laneError: event.error };
      // The worker ended the lane with its clean end: the session is over, and the host knows how. The tracker's
      // end (which follows the agent's report) would add only a round trip to the host's next request.
      if (state.workerEnd === null) return settle(down, null);
      if (phase === "draining") return settle(down, state.trackerEnd ?? null);
      return applied({ ...down, phase: "closing", timers: [...state.timers, "closing"] }, [{ kind: "startTimer", name: "closing", ms: state.closingWaitMs }]);
    }
    case "timerFired": {
      if (!state.timers.includes(event.name)) return notArmed(state, event.name);
      const fired: ChannelMachineState = { ...state, timers: state.timers.filter((t) => t !== event.name) };
      if (event.name === "drain") return settle(fired, state.trackerEnd ?? null);
      // A reachable tracker settles every end within its grace (a silent agent is its RUNTIME_CRASH): silence past
      // twice that means this host cannot hear the tracker, which is no fault of the kernel (measure() retries it).
      const lost =
        state.laneError ??
        new FarmError(
          "UNAVAILABLE",
          `the session's ${state.lane} lane closed and the tracker did not say why within ${state.closingWaitMs} ms: it may be unreachable from this host (a network partition?)`,
        );
      return settle(fired, state.workerEnd !== undefined ? state.workerEnd : lost);
    }
    case "hostEnd":
      return applied(state, [{ kind: "endOutput" }]);
    case "abort":
      return settle(state, dropped(), [{ kind: "cancelStream" }]);
    case "dialed":
    case "dialFailed":
      return ignored(state, `the ${state.lane} lane is open already`);
    case "granted":
    case "requestFailed":
      return ignored(state, "the request was granted already");
  }
}

function closed(state: ChannelMachineState, event: ChannelEvent): ChannelStep {
  switch (event.kind) {
    case "dialed":
      // Dropped while its lane was dialled: the lane that connected after all is closed at once.
      return applied(state, [{ kind: "closeLane" }]);
    case "abort":
      return applied(state, [{ kind: "cancelStream" }]);
    case "hostEnd":
      if (!state.opened) return refused(state, notOpen(state));
      return applied(state, [{ kind: "endOutput" }]);
    default:
      return ignored(state, `the session has closed; ${event.kind} comes after its close`);
  }
}

/** Every way an open session ends; `reason` null means a clean end. */
function settle(state: ChannelMachineState, reason: FarmError | null, before: ChannelEffect[] = []): ChannelStep {
  const effects: ChannelEffect[] = [...before];
  for (const name of state.timers) effects.push({ kind: "cancelTimer", name });
  if (state.lane !== "grpc") {
    if (state.laneUp) effects.push({ kind: "closeLane" });
    effects.push({ kind: "endStream" });
  }
  effects.push({ kind: "settle", reason });
  return applied({ ...state, phase: "closed", reason, timers: [] }, effects);
}

/** The Session stream's end, saying so when the tracker went away: the session cannot outlive its lease, which lived there. */
function trackerGone(state: ChannelMachineState, error: FarmError): FarmError {
  return new FarmError(
    "UNAVAILABLE",
    `the tracker at ${state.config.tracker} went away (${error.message}) and its lease on this board with it: the board's agent ends the session too. Request a new session; a restarted tracker takes requests as soon as it listens`,
    { cause: error },
  );
}

function dropped(): FarmError {
  return new FarmError("CANCELLED", "the session was dropped by this host");
}

function notOpen(state: ChannelMachineState): FarmError {
  return new FarmError(
    "INTERNAL",
    `a bug in kernelfarm: the session's lane was ended while ${state.phase}, before it opened (a Session is made once its lane is open)`,
  );
}

function notArmed(state: ChannelMachineState, name: TimerName): ChannelStep {
  return ignored(state, `the ${name} timer is not armed`);
}

function applied(state: ChannelMachineState, effects: readonly ChannelEffect[]): ChannelStep {
  return { outcome: "applied", state, effects };
}

function ignored(state: ChannelMachineState, why: string): ChannelStep {
  return { outcome: "ignored", state, effects: [], why };
}

function refused(state: ChannelMachineState, error: FarmError): ChannelStep {
  return { outcome: "refused", state, effects: [], error };
}
