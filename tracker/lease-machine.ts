/**
 * The tracker's side of the session lifecycle as a pure state machine:
 * `step(state, event)` → the next state and the effects, as data. Nothing
 * here reads a clock, arms a timer or touches a stream: tracker/lease.ts is
 * the shell that owns those, feeds what happens into `step` and performs
 * what comes back. Its TSDoc holds the state table; docs/architecture.md
 * ("One session lifecycle") the reasons an end may carry.
 *
 * Transitions (every row is a spec in lease-machine.spec.ts):
 *
 * | state              | event                                    | → state   | effects |
 * |--------------------|------------------------------------------|-----------|---------|
 * | (new)              | `begin`                                  | `granted` | start `open` timer; start `session` timer if its limit > 0 |
 * | `granted`          | `hostAttached`                           | `granted` | send the grant; then as "lane ready" below if the other side waits |
 * | `granted`          | `workerStreamAttached` (grpc route)      | `granted` | as "lane ready" below if the host's stream is there |
 * | `granted`          | `socketArrived` (relay/auto route)       | `granted` | as "lane ready" below if both sockets and the host's stream are there |
 * | `granted`          | lane ready: worker stream + host stream  | `active`  | start the relay, cancel `open`, tell the active-listeners (lane `grpc`) |
 * | `granted`          | lane ready: both sockets + host stream   | `active`  | join the sockets, cancel `open`, tell the active-listeners (lane `relay`) |
 * | `granted`          | `laneOpened` (direct, tvm)               | `active`  | cancel `open`, tell the active-listeners |
 * | `granted`          | `timerFired` `open`                      | `ended`   | end CANCELLED, naming the side that did not come |
 * | `granted`/`active` | `laneClosed` (first)                     | same      | start the `grace` timer: the agent's report is awaited |
 * | `granted`/`active` | `timerFired` `grace`                     | `ended`   | end RUNTIME_CRASH ("did not say why") |
 * | `granted`/`active` | `timerFired` `session`                   | `ended`   | end SESSION_TIMEOUT |
 * | `granted`/`active` | `hostLeft`                               | `ended`   | end CANCELLED ("the host left") |
 * | `granted`/`active` | `workerGoodbye` (the relay saw the clean end frame) | `ended` | end clean |
 * | `granted`/`active` | `end` (agent's report, ReleaseSession, agent lost, drain, token revoked, TVM server) | `ended` | end with its reason |
 * | `ended`            | `hostAttached` (the grant came late)     | `ended`   | send the grant and at once the end |
 *
 * Ending is one list of effects, in this order: tell the end-listeners,
 * cancel every armed timer, stop the relay (grpc lane), send the host the
 * end, finish the worker's stream, close each relay socket (gently on a
 * clean end), hand the board back.
 *
 * What is not a transition is said, not fallen through (`ignored` with why,
 * or `refused` with the FarmError the caller gets):
 *
 * - ignored: any event but `hostAttached` once `ended` (a second end, a lane
 *   or a report after the end, a socket's close caused by the end itself);
 *   `laneOpened` once `active`; `laneClosed` while the grace already runs; a
 *   timer that is not armed (`open` once the lane opened);
 * - refused: a worker stream on a route other than grpc, a second one, one
 *   after the end; a data-port socket after the end, on a route other than
 *   relay/auto, on an open direct lane, or a second one of a role
 *   (`checkSocket`); a second host stream.
 */
import { FarmError, type Lane, type Route } from "../protos/index.ts";

export type LeaseState = "granted" | "active" | "ended";
/**
 * The lane a session got: one of kernelfarm's (protos/routes.ts), or `tvm`:
 * a TVM client connected to a TVM server itself, on TVM's own protocol
 * (tracker/tvm/), which the tracker never sees.
 */
export type LeaseLane = Lane | "tvm";
export type SocketRole = "host" | "worker";

export interface LeaseTimeouts {
  openTimeoutMs: number;
  sessionTimeoutMs: number;
  /** The session end grace (protos/routes.ts): how long to wait for the agent to say why a lane closed. */
  endGraceMs: number;
}

/** The shell's timers, by name: `open` (the lane must open), `session` (the session's limit), `grace` (the agent's report on a closed lane). */
export type TimerName = "open" | "session" | "grace";

/** What the machine is told about the lease once, at its start: only what its messages and checks read. */
export interface LeaseConfig {
  readonly id: string;
  readonly boardId: string;
  /** What a lease whose lane never opened lacked, in its agent's clients' words (registry.ts AgentControl: a TVM server's); undefined: the lane's own account. */
  readonly laneMissing?: string;
  readonly route: Route;
  readonly timeouts: LeaseTimeouts;
}

export interface LeaseMachineState {
  readonly config: LeaseConfig;
  readonly phase: LeaseState;
  /** Set when the lane opens; stays after the end (it says which lane the session had). */
  readonly lane: LeaseLane | undefined;
  /** Why it ended; null: cleanly (or not ended). */
  readonly reason: FarmError | null;
  /** The host's Session stream is attached (the grant went out on it). */
  readonly host: boolean;
  /** grpc route: the board's ServeSession stream is attached. */
  readonly workerStream: boolean;
  /** relay lane: which sides' data-port sockets are attached. */
  readonly sockets: { readonly host: boolean; readonly worker: boolean };
  /** A lane closed without an end the tracker saw: the `grace` timer runs for the agent's report. */
  readonly awaitingReport: boolean;
  /** The timers armed now, so that an end cancels exactly these and a stale one is recognised. */
  readonly timers: readonly TimerName[];
}

export type LeaseEvent =
  /** The host's Session stream: the grant is ready to go out on it. */
  | { readonly kind: "hostAttached" }
  /** The host's Session stream broke or was cancelled (its process died, its network went). */
  | { readonly kind: "hostLeft" }
  /** grpc route: the board's ServeSession stream arrived, its ticket checked. */
  | { readonly kind: "workerStreamAttached" }
  /** relay (or auto's fallback): one side's socket said its hello at the data port, its ticket checked. */
  | { readonly kind: "socketArrived"; readonly role: SocketRole }
  /** A lane the tracker does not carry opened: the agent's LaneOpened (direct), or a TVM server stopped polling (tvm). */
  | { readonly kind: "laneOpened"; readonly lane: "direct" | "tvm" }
  /** A relayed lane closed, or the worker's stream broke or half-closed, without an end the tracker saw. */
  | { readonly kind: "laneClosed" }
  /** grpc lane: the relay saw the worker's clean end frame. */
  | { readonly kind: "workerGoodbye" }
  /** One of the shell's timers went off. */
  | { readonly kind: "timerFired"; readonly name: TimerName }
  /**
   * Whoever knows how it ended says so: the agent's session_ended (with or
   * without a reason), ReleaseSession (clean), the agent lost (AGENT_LOST),
   * the tracker draining (DRAINED), the token revoked (UNAUTHENTICATED), a
   * TVM server's PUT or stale key.
   */
  | { readonly kind: "end"; readonly reason: FarmError | null };

/** What the shell does for the machine; each says what it is for. */
export type LeaseEffect =
  /** Arm a timer; when it goes off the shell feeds `timerFired` with its name. */
  | { readonly kind: "startTimer"; readonly name: TimerName; readonly ms: number }
  /** Disarm a timer that is no longer wanted (the lane opened, the lease ended). */
  | { readonly kind: "cancelTimer"; readonly name: TimerName }
  /** Write the grant on the host's Session stream: its first message. */
  | { readonly kind: "sendGrant" }
  /** grpc lane: relay the host's stream and the worker's, bytes undecoded (tracker/relay.ts). */
  | { readonly kind: "startRelay" }
  /** relay lane: pass on what each socket read past its hello, then pipe the two sockets into each other. */
  | { readonly kind: "joinSockets" }
  /** Run the whenActive listeners (the scheduler shows the board's lane). */
  | { readonly kind: "notifyActive" }
  /** Run the whenEnded listeners (audit, the token's hold, the TVM server's key). */
  | { readonly kind: "notifyEnded" }
  /** grpc lane: stop the relay, so nothing more moves between the streams. */
  | { readonly kind: "stopRelay" }
  /** The host's last message: the end frame with the reason, then its stream ends (with the reason as its status). */
  | { readonly kind: "sendEnd"; readonly reason: FarmError | null }
  /** grpc route: end the board's ServeSession stream (with the reason as its status). */
  | { readonly kind: "finishWorkerStream"; readonly reason: FarmError | null }
  /** relay lane: close one side's socket; `clean` lets it finish its writes and read its peer's end first (lease.ts closeLaneSocket). */
  | { readonly kind: "closeSocket"; readonly role: SocketRole; readonly clean: boolean }
  /** Hand the board back (the scheduler frees it and tells the agent end_session); the last effect of every end. */
  | { readonly kind: "handBack" };

export type LeaseStep =
  | { readonly outcome: "applied"; readonly state: LeaseMachineState; readonly effects: readonly LeaseEffect[] }
  /** Nothing changes; `why` says why the event has no effect here. */
  | { readonly outcome: "ignored"; readonly state: LeaseMachineState; readonly effects: readonly []; readonly why: string }
  /** Nothing changes; the caller gets `error` (the shell throws it). */
  | { readonly outcome: "refused"; readonly state: LeaseMachineState; readonly effects: readonly []; readonly error: FarmError };

/** A new lease: `granted`, its timers armed. */
export function begin(config: LeaseConfig): { state: LeaseMachineState; effects: LeaseEffect[] } {
  const { openTimeoutMs, sessionTimeoutMs } = config.timeouts;
  // A session limit of 0 is none.
  const timers: TimerName[] = sessionTimeoutMs > 0 ? ["open", "session"] : ["open"];
  return {
    state: {
      config,
      phase: "granted",
      lane: undefined,
      reason: null,
      host: false,
      workerStream: false,
      sockets: { host: false, worker: false },
      awaitingReport: false,
      timers,
    },
    effects: timers.map((name) => ({ kind: "startTimer", name, ms: name === "open" ? openTimeoutMs : sessionTimeoutMs })),
  };
}

export function step(state: LeaseMachineState, event: LeaseEvent): LeaseStep {
  const { id, route, timeouts } = state.config;
  if (state.phase === "ended" && event.kind !== "hostAttached" && event.kind !== "workerStreamAttached" && event.kind !== "socketArrived") {
    return ignored(state, `session ${id} has ended; ${event.kind} comes after its end`);
  }
  switch (event.kind) {
    case "hostAttached": {
      if (state.host) return refused(state, new FarmError("PROTOCOL_ERROR", `session ${id} already has its host's Session stream`));
      const next = { ...state, host: true };
      // Ended before its grant went out: the host still gets grant then end, so that its stream does not wait forever.
      if (state.phase === "ended") return applied(next, [{ kind: "sendGrant" }, { kind: "sendEnd", reason: state.reason }]);
      return laneReady(next, [{ kind: "sendGrant" }]);
    }
    case "workerStreamAttached": {
      if (state.phase === "ended") return refused(state, new FarmError("NOT_FOUND", `session ${id} has ended`));
      if (route !== "grpc") return refused(state, new FarmError("PROTOCOL_ERROR", `session ${id} travels on the ${route} route, not on gRPC streams`));
      if (state.workerStream) return refused(state, new FarmError("PROTOCOL_ERROR", `session ${id} already has a worker stream`));
      return laneReady({ ...state, workerStream: true }, []);
    }
    case "socketArrived": {
      const refusal = checkSocket(state, event.role);
      if (refusal) return refused(state, refusal);
      return laneReady({ ...state, sockets: { ...state.sockets, [event.role]: true } }, []);
    }
    case "laneOpened":
      if (state.phase !== "granted") return ignored(state, `session ${id} is open already (lane ${state.lane})`);
      return activate({ ...state, lane: event.lane }, []);
    case "laneClosed":
      if (state.awaitingReport) return ignored(state, `session ${id} already awaits its agent's report`);
      return applied({ ...state, awaitingReport: true, timers: [...state.timers, "grace"] }, [{ kind: "startTimer", name: "grace", ms: timeouts.endGraceMs }]);
    case "workerGoodbye":
      return end(state, null);
    case "hostLeft":
      return end(state, new FarmError("CANCELLED", `the host left session ${id}`));
    case "end":
      return end(state, event.reason);
    case "timerFired": {
      if (!state.timers.includes(event.name)) return ignored(state, `the ${event.name} timer of session ${id} is not armed`);
      const fired = { ...state, timers: state.timers.filter((t) => t !== event.name) };
      switch (event.name) {
        case "open":
          return end(
            fired,
            new FarmError("CANCELLED", `session ${id} was released: its lane did not open within ${timeouts.openTimeoutMs} ms (${missing(state)})`),
          );
        case "session":
          return end(
            fired,
            new FarmError(
              "SESSION_TIMEOUT",
              `session ${id} exceeded its session timeout of ${timeouts.sessionTimeoutMs} ms; request a longer sessionTimeoutMs`,
            ),
          );
        case "grace":
          return end(
            fired,
            new FarmError(
              "RUNTIME_CRASH",
              `the session worker of board ${state.config.boardId} went away and its agent did not say why within ${timeouts.endGraceMs} ms`,
            ),
          );
      }
    }
  }
}

/** Why `role`'s data-port socket may not join this session now; undefined: it may. */
export function checkSocket(state: LeaseMachineState, role: SocketRole): FarmError | undefined {
  const { id, route } = state.config;
  if (state.phase === "ended") return new FarmError("NOT_FOUND", `session ${id} has ended`);
  if (route !== "relay" && route !== "auto") return new FarmError("PROTOCOL_ERROR", `session ${id} travels on the ${route} route, not through the data port`);
  if (state.lane === "direct") return new FarmError("PERMISSION_DENIED", `session ${id} is open on its direct lane; its ticket is used`);
  if (state.sockets[role]) return new FarmError("PERMISSION_DENIED", `session ${id} already has its ${role} lane; the ticket is used`);
  return undefined;
}

/** Opens the lane if both of its sides and the host's Session stream are there: a worker stream (grpc), else both sockets (relay). */
function laneReady(state: LeaseMachineState, effects: LeaseEffect[]): LeaseStep {
  if (state.phase !== "granted" || !state.host) return applied(state, effects);
  if (state.workerStream) return activate({ ...state, lane: "grpc" }, [...effects, { kind: "startRelay" }]);
  if (state.sockets.host && state.sockets.worker) return activate({ ...state, lane: "relay" }, [...effects, { kind: "joinSockets" }]);
  return applied(state, effects);
}

function activate(state: LeaseMachineState, effects: LeaseEffect[]): LeaseStep {
  const next: LeaseMachineState = { ...state, phase: "active", timers: state.timers.filter((t) => t !== "open") };
  const cancel: LeaseEffect[] = state.timers.includes("open") ? [{ kind: "cancelTimer", name: "open" }] : [];
  return applied(next, [...effects, ...cancel, { kind: "notifyActive" }]);
}

/** Every way a lease ends; `reason` null means a clean close. */
function end(state: LeaseMachineState, reason: FarmError | null): LeaseStep {
  const effects: LeaseEffect[] = [{ kind: "notifyEnded" }];
  for (const name of state.timers) effects.push({ kind: "cancelTimer", name });
  if (state.lane === "grpc") effects.push({ kind: "stopRelay" });
  if (state.host) effects.push({ kind: "sendEnd", reason });
  if (state.workerStream) effects.push({ kind: "finishWorkerStream", reason });
  for (const role of ["host", "worker"] as const) if (state.sockets[role]) effects.push({ kind: "closeSocket", role, clean: reason === null });
  effects.push({ kind: "handBack" });
  return applied({ ...state, phase: "ended", reason, timers: [] }, effects);
}

/** Which side did not come, for the `open` timer's message. */
function missing(state: LeaseMachineState): string {
  const { laneMissing, route } = state.config;
  if (laneMissing) return laneMissing;
  if (route === "grpc") return state.workerStream ? "the host sent nothing" : "the board's worker did not open its stream";
  if (route === "relay" || state.sockets.host || state.sockets.worker)
    return state.sockets.host ? "the board's worker did not reach the data port" : "the host did not reach the data port";
  return "the host did not reach the board's agent";
}

function applied(state: LeaseMachineState, effects: readonly LeaseEffect[]): LeaseStep {
  return { outcome: "applied", state, effects };
}

function ignored(state: LeaseMachineState, why: string): LeaseStep {
  return { outcome: "ignored", state, effects: [], why };
}

function refused(state: LeaseMachineState, error: FarmError): LeaseStep {
  return { outcome: "refused", state, effects: [], error };
}
