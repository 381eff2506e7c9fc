/**
 * The agent's side of the session lifecycle as a pure state machine: one
 * board's session workers. `step(state, event)` → the next state and the
 * effects, as data. Nothing here reads a clock, arms a timer, spawns a
 * process, makes a folder or touches a socket: device-agent/agent/pool.ts is
 * the shell that owns those, feeds what happens into `step` and performs
 * what comes back. docs/architecture.md ("One session lifecycle", Agent)
 * has the states; the worker's messages and what each may say are in
 * pool.ts's TSDoc.
 *
 * A worker is `starting` (forked, warming up, running its canary) → `idle`
 * (warm, its standby lane listening) → `serving` (one session) → `idle`
 * again (its session loaded no native code) or `exiting` (killed or told to
 * go); from any state it may die. The board's pool keeps `warm` workers
 * `starting` or `idle`, and at most one session waits for a worker.
 *
 * An effect whose outcome the machine needs is answered by an event the
 * shell feeds back: `spawn` by `spawned`/`spawnFailed`, `openStandby` by
 * `standbyOpened`, `makeSessionFolder` by `folderMade`/`folderFailed`,
 * `sendAssign` by `assignSent`, `serveRequest` by `requestDone`. The shell
 * feeds the synchronous ones at once, as it performs the effect; the state
 * is in place by then.
 *
 * Transitions (every row is a spec in pool-machine.spec.ts):
 *
 * | worker state        | event                                          | → worker state | effects |
 * |---------------------|------------------------------------------------|----------------|---------|
 * | (none)              | `fill`, or any row below that ends "fill"      | `starting`     | `spawn` until `warm` workers are starting or idle (none once closed) |
 * | `starting`          | `spawned` (its pid)                            | `starting`     | — |
 * | `starting`          | `spawnFailed` (no uid, no home)                | (gone)         | — (no new spawn: it would fail the same way, again and again) |
 * | `starting`          | says "ready"                                   | `starting`     | count its start time; `openStandby` where workers have standby lanes, else as `standbyOpened` |
 * | `starting`          | `standbyOpened` (its port; 0: none)            | `idle`         | a waiting session takes it (as `assign`); else `boardReady` unless a session runs, then `prepareFolder` |
 * | `idle`              | `assign` (the grant named its standby lane, or it is the first idle one) | `serving` | `makeSessionFolder` (the shell gives it the folder prepared while it was idle, if it has one) |
 * | `idle`              | `claimed` (it admitted a host by the ticket alone, the ticket checked by the shell too) | `serving` | `adoptFolder`, `laneOpened` to the tracker; `boardReady` if another worker is idle |
 * | `serving` its session | `claimed` (its assignment was on its way)    | `serving`      | as "lane_opened" |
 * | any other           | `claimed` (the ticket does not open it, or for a session it does not serve) | `exiting` | the breach row below |
 * | `serving` by ticket | `assign` of its session                        | `serving`      | — (ignored: it took the session already) |
 * | —                   | `assign` of a session that ended here (taken by its ticket and over before its assignment came; the last ENDED_KEPT) | — | — (ignored: never started again) |
 * | (none idle)         | `assign`                                       | —              | the session waits, its lanes with it (replacing one that waited: its lanes dropped); fill (closed: ended INTERNAL, counted) |
 * | `serving` (folder)  | `folderMade`                                   | `serving`      | `sendAssign` (with the lease the assignment carried) |
 * | `serving` (folder)  | `folderFailed`                                 | `idle`         | count INTERNAL, `sessionEnded` with the error, drop its lanes; `boardReady` unless another session runs |
 * | `serving` (message) | `assignSent`, delivered                        | `serving`      | `boardReady` if another worker is idle; hand it the lanes that came meanwhile |
 * | `serving` (message) | `assignSent`, not delivered                    | `exiting`      | count RUNTIME_CRASH, kill, `sessionEnded` RUNTIME_CRASH ("went away before it took the session"), drop its lanes |
 * | —                   | `laneArrived` for the waiting session          | —              | kept for it |
 * | `serving`           | `laneArrived` for its session                  | `serving`      | `handLane` (kept until it has taken the session) |
 * | `serving`           | says "foreign_code" (tainted)                  | `serving`      | never serves again; fill (its successor boots while it serves) |
 * | `serving`           | says "lane_opened" (first)                     | `serving`      | `laneOpened` to the tracker |
 * | `serving`           | says "counters"                                | `serving`      | count them |
 * | `serving`           | says "lane_bytes" for its session              | `serving`      | `laneBytes` (the shell checks them against what a lane can carry: lane-bytes.ts) |
 * | `serving`           | says store_keep / store_take / program_fpga / output_read | `serving` | `serveRequest` (at most WORKER_MAX_PENDING_REQUESTS at once) |
 * | any                 | `requestDone`                                  | same           | the reply is sent if it serves |
 * | `serving`           | says "ended", reusable, no native code, fewer than `warm` idle, not closed | `idle` | cancel the grace; count; `sessionEnded` (its reason); a waiting session takes it, else fill, `boardReady` and `prepareFolder`; remove the folder |
 * | `serving`           | says "ended", reusable, enough idle (or closed) | `exiting`     | as above, but SIGTERM; fill; `boardReady` if one is idle; remove the folder (with uids of their own: at its exit) |
 * | `serving`           | says "ended", not reusable (or tainted)        | `exiting`      | as above, but SIGKILL |
 * | `serving`           | `endSession` with a reason                     | `exiting`      | count the reason, kill |
 * | `serving`           | `endSession` clean                             | `serving`      | send "end"; arm `grace` |
 * | `serving`           | `timerFired` `grace`                           | `exiting`      | count OK, kill |
 * | —                   | `endSession` of the waiting session            | —              | it waits no more; drop its lanes |
 * | `serving` (folder/message) | `endSession` (any)                      | `exiting`      | count (the reason's code, or OK), kill, drop its lanes: it half knows a session that is over |
 * | `idle`              | `timerFired` `canary` (first idle worker that never loaded native code nor was asked) | `idle` | send run_canary; arm `canary` again |
 * | `starting`/`idle`   | says "canary", asked, no native code           | same           | `health` (the canary's verdict) if it ran |
 * | any but `exiting`   | says anything out of its scope, or `channelBroken` | `exiting`  | cut it off (stop its channel, log); count the error; kill its group; `sessionEnded` PROTOCOL_ERROR if it served |
 * | `serving`           | `laneBroken` for its session (it broke its lane's framing: the agent's grpc bridge cut it) | `exiting` | as the row above |
 * | `serving`           | `exited` (not killed by the agent)             | (gone)         | reap; count and `sessionEnded` with its death (RUNTIME_CRASH, TIMEOUT, TOO_LARGE); fill; `boardReady` if idle and no session |
 * | `starting`/`idle`   | `exited` (not killed, not closed)              | (gone)         | reap; `workerDied` (infra health); fill; `boardReady` if idle and no session |
 * | `exiting`           | `exited`                                       | (gone)         | reap (with the folder it kept); fill; `boardReady` if idle and no session |
 * | `serving`           | `trackerLost`                                  | `exiting`      | count AGENT_LOST, kill |
 * | any                 | `close`                                        | `exiting`      | kill, reap now; remove the folders waiting for their uid; drop a waiting session's lanes; never fill again |
 * | —                   | `endGrace`                                     | —              | the grace of later clean ends |
 *
 * What is not a transition is said, not fallen through (`ignored` with why);
 * nothing is refused (the pool's callers are the agent itself; a worker's
 * word out of its scope is the breach row above):
 *
 * - ignored: anything a worker says once it is `exiting` (it is being
 *   killed); an event for a worker that has gone; a lane or an end for a
 *   session no worker of this board serves (another board's); a second
 *   clean `endSession` while the grace runs; "lane_opened" after the first;
 *   a timer that is not armed; `standbyOpened` for a worker no longer
 *   `starting`; `canary` with no idle worker to ask; a second `close`.
 */
import { FarmError, WORKER_MAX_PENDING_REQUESTS, workerProtocolError, type AgentToWorker, type Route, type WorkerMessage } from "../../protos/index.ts";

export type WorkerState = "starting" | "idle" | "serving" | "exiting";
export const WORKER_STATES: readonly WorkerState[] = ["starting", "idle", "serving", "exiting"];

/** A worker's name in the machine: the shell keeps its process under it. */
export type WorkerId = number;
/** A lane (a socket the agent holds) by the shell's name for it. */
export type LaneId = number;

/** A canary's result or an infrastructure error, as the tracker hears it (BoardHealthReport). */
export interface HealthReport {
  kind: "canary" | "infra";
  ok: boolean;
  reason: string;
  durationMs: number;
  /** A passing canary: its kernel's time per run (device-agent/backends/canary-timing.ts); 0: not timed. */
  kernelNs: number;
}

/** What the machine is told about its board once, at its start. */
export interface PoolConfig {
  readonly boardName: string;
  /** The board's kind: only a `vta` board's workers may ask for the FPGA. */
  readonly kind: string;
  /** Workers kept starting or idle. */
  readonly warm: number;
  /** Workers get a standby lane of their own (the agent has a direct lane workers may listen on). */
  readonly standby: boolean;
  /** Workers run as uids of their own (as root): a killed worker's folder goes only once nothing of its uid runs. */
  readonly ownUids: boolean;
  /** How often an idle worker runs the board's canary; 0: never. */
  readonly canaryIntervalMs: number;
  /** The session end grace (protos/routes.ts), until the tracker says its own (`endGrace`). */
  readonly endGraceMs: number;
}

/** The shell's timers: the board's periodic canary, and each cleanly ended session's grace. */
export type PoolTimer = { readonly name: "canary" } | { readonly name: "grace"; readonly worker: WorkerId };

export interface WorkerRecord {
  readonly id: WorkerId;
  readonly state: WorkerState;
  /** Its process id, once spawned (undefined: not yet, or the OS gave none). */
  readonly pid: number | undefined;
  readonly sessionId: string | undefined;
  /**
   * A `serving` worker that has not taken its session yet: its folder is
   * being made, or the assignment sent; the lanes that came for the session
   * meanwhile wait for it.
   */
  readonly assigning:
    | { readonly phase: "folder" | "message"; readonly token: string; readonly route: Route; readonly lanes: readonly LaneId[]; readonly lease?: SessionLease }
    | undefined;
  /** The session whose folder it holds (made for it, not removed yet). */
  readonly folder: string | undefined;
  /** The agent killed it or told it to go: its exit is not news. */
  readonly expectedExit: boolean;
  /** Its current session's end was counted in the metrics. */
  readonly counted: boolean;
  /** Its standby lane's port; 0: it has none; undefined: not opened yet. */
  readonly lanePort: number | undefined;
  /** A session of it loaded native code: nothing it says is believed beyond that session, and it serves no other. */
  readonly nativeCode: boolean;
  /** It was asked to run the canary (at start, or `canary`) and has not answered. */
  readonly canaryAsked: boolean;
  /** Store, FPGA and output requests in flight. */
  readonly pending: number;
  /** Its current session's lane was reported open to the tracker. */
  readonly laneOpened: boolean;
  /** Its `grace` timer runs (a clean end_session, awaiting its "ended"). */
  readonly graceArmed: boolean;
}

/** A session assigned while no worker was idle, and the lanes that came for it meanwhile. */
export interface WaitingSession {
  readonly sessionId: string;
  readonly token: string;
  readonly route: Route;
  readonly lanes: readonly LaneId[];
  readonly lease?: SessionLease;
}

/**
 * The session's lease as the tracker granted it: its timeout, and when it
 * ends by the shell's clock (opaque here: carried from `assign` to
 * `sendAssign`, where the shell tells the worker how long its calls have).
 */
export interface SessionLease {
  readonly timeoutMs: number;
  readonly endsAt: number;
}

export interface PoolMachineState {
  readonly config: PoolConfig;
  readonly endGraceMs: number;
  /** In the order they were forked: the first idle one takes a session the grant did not name a lane for. */
  readonly workers: readonly WorkerRecord[];
  readonly waiting: WaitingSession | undefined;
  /** The pool is closing: nothing is started again. */
  readonly closed: boolean;
  /**
   * The last sessions that ended here (at most ENDED_KEPT): a session taken
   * by its ticket can be over before its assignment comes, which then must
   * not start it again.
   */
  readonly ended: readonly string[];
  readonly nextWorker: WorkerId;
  readonly canaryArmed: boolean;
}

/** A worker's request to the agent, served by the shell (content store, FPGA, its session's output). */
export type WorkerRequest = Extract<WorkerMessage, { kind: "store_keep" | "store_take" | "program_fpga" | "output_read" }>;

export type PoolEvent =
  /** Start workers until `warm` are starting or idle (the agent, at start). */
  | { readonly kind: "fill" }
  /** `spawn`'s outcome: the process is forked. */
  | { readonly kind: "spawned"; readonly worker: WorkerId; readonly pid: number | undefined }
  /** `spawn`'s outcome: it could not be (no free uid, no home); the shell logged why. */
  | { readonly kind: "spawnFailed"; readonly worker: WorkerId }
  /** A worker's well-formed message (worker-channel.ts decoded it); whether it may say it is the machine's to judge. */
  | { readonly kind: "message"; readonly worker: WorkerId; readonly msg: WorkerMessage }
  /** `openStandby`'s outcome: the worker holds its standby lane at `port`; 0: it has none. */
  | { readonly kind: "standbyOpened"; readonly worker: WorkerId; readonly port: number }
  /** A worker's channel broke its contract (bytes that do not decode, a frame too large). */
  | { readonly kind: "channelBroken"; readonly worker: WorkerId; readonly error: FarmError }
  /** A session's lane through the agent (the grpc bridge) was cut: its worker broke the lane's framing. */
  | { readonly kind: "laneBroken"; readonly sessionId: string; readonly error: FarmError }
  /** A worker's process exited and its channel drained; `death` is the shell's account of it, as a session would hear it. */
  | { readonly kind: "exited"; readonly worker: WorkerId; readonly code: number | null; readonly signal: NodeJS.Signals | null; readonly death: FarmError }
  /** The tracker's AssignSession; `lanePort`: the standby lane its grant named (0: none); `lease`: its timeout (none: no timeout). */
  | {
      readonly kind: "assign";
      readonly sessionId: string;
      readonly token: string;
      readonly route: Route;
      readonly lanePort: number;
      readonly lease?: SessionLease;
    }
  /**
   * A worker said "lane_opened" with the session's ticket: it admitted the
   * host by the ticket alone, at its standby lane. `error`: the shell's
   * check of the ticket (signed by the tracker for this board and this
   * worker) failed, and why.
   */
  | { readonly kind: "claimed"; readonly worker: WorkerId; readonly sessionId: string; readonly error?: FarmError }
  /** `makeSessionFolder`'s outcome: made (and its tmpfs mounted). */
  | { readonly kind: "folderMade"; readonly worker: WorkerId }
  /** `makeSessionFolder`'s outcome: it could not be; `error` is what the session's host hears. */
  | { readonly kind: "folderFailed"; readonly worker: WorkerId; readonly error: FarmError }
  /** `sendAssign`'s outcome: whether the assignment reached the worker's channel. */
  | { readonly kind: "assignSent"; readonly worker: WorkerId; readonly delivered: boolean }
  /** A session's lane (a socket the agent accepted or dialled) for the worker that serves it. */
  | { readonly kind: "laneArrived"; readonly sessionId: string; readonly lane: LaneId }
  /** The tracker's end_session: clean (null), or with the reason the session ended. */
  | { readonly kind: "endSession"; readonly sessionId: string; readonly reason: FarmError | null }
  /** `serveRequest`'s outcome: the reply to the worker's request. */
  | { readonly kind: "requestDone"; readonly worker: WorkerId; readonly reply: AgentToWorker }
  /** One of the shell's timers went off. */
  | { readonly kind: "timerFired"; readonly timer: PoolTimer }
  /** The tracker's Registered named the session end grace. */
  | { readonly kind: "endGrace"; readonly ms: number }
  /** The tracker went away: its sessions are gone with it. */
  | { readonly kind: "trackerLost" }
  /** The agent is closing: every worker dies now. */
  | { readonly kind: "close" };

/** What the shell does for the machine; each says what it is for. */
export type PoolEffect =
  /** Fork a worker under this id; the shell feeds `spawned` or `spawnFailed`. */
  | { readonly kind: "spawn"; readonly worker: WorkerId }
  /** Open the worker's standby lane and hand it over; the shell feeds `standbyOpened`. */
  | { readonly kind: "openStandby"; readonly worker: WorkerId }
  /** Make the session's folder for the worker's uid (and mount its tmpfs); the shell feeds `folderMade` or `folderFailed`. */
  | { readonly kind: "makeSessionFolder"; readonly worker: WorkerId; readonly sessionId: string }
  /** Make the next session's folder for an idle worker now (and mount its tmpfs), and tell the worker: the session that comes takes it. */
  | { readonly kind: "prepareFolder"; readonly worker: WorkerId }
  /** The worker took `sessionId` by its ticket: the folder prepared for it is that session's now. */
  | { readonly kind: "adoptFolder"; readonly worker: WorkerId; readonly sessionId: string }
  /** Remove a session's folder (detach its tmpfs), now. */
  | { readonly kind: "removeSessionFolder"; readonly sessionId: string }
  /** Send the worker its session (with the folder's path and what is left of its lease); the shell feeds `assignSent`. */
  | {
      readonly kind: "sendAssign";
      readonly worker: WorkerId;
      readonly sessionId: string;
      readonly token: string;
      readonly route: Route;
      readonly lease?: SessionLease;
    }
  /** Send the worker a message that needs no answer from the machine (end, run_canary, a request's reply). */
  | { readonly kind: "send"; readonly worker: WorkerId; readonly msg: AgentToWorker }
  /** Hand the session's lane to its worker; the agent's copy of the socket goes. */
  | { readonly kind: "handLane"; readonly worker: WorkerId; readonly sessionId: string; readonly lane: LaneId }
  /** Close a lane no worker will take. */
  | { readonly kind: "dropLane"; readonly lane: LaneId }
  /** Serve a worker's request in its session's folder; the shell feeds `requestDone`. */
  | { readonly kind: "serveRequest"; readonly worker: WorkerId; readonly request: WorkerRequest }
  /** Stop reading the worker's channel and log (audit) that it broke the agent's protocol. */
  | { readonly kind: "cutOff"; readonly worker: WorkerId; readonly sessionId: string | undefined; readonly state: WorkerState; readonly error: FarmError }
  /** Signal the worker; `group`: its process group too, now (what its kernel forked). */
  | { readonly kind: "kill"; readonly worker: WorkerId; readonly signal: "SIGKILL" | "SIGTERM"; readonly group: boolean }
  /** What a dead worker leaves: `folder`'s folder (late where its uid must be cleared first), its processes, its uid, its home. */
  | { readonly kind: "reap"; readonly worker: WorkerId; readonly folder: string | undefined }
  /** As `reap`, at once (the agent may be exiting): every process of it killed and waited for, `folder`'s folder removed. */
  | { readonly kind: "reapNow"; readonly worker: WorkerId; readonly folder: string | undefined }
  /** Remove, at once, the folders of exited workers still waiting for their uid to be cleared. */
  | { readonly kind: "removeLateFolders" }
  /** Arm a timer; when it goes off the shell feeds `timerFired` with it. */
  | { readonly kind: "startTimer"; readonly timer: PoolTimer; readonly ms: number }
  | { readonly kind: "cancelTimer"; readonly timer: PoolTimer }
  /** Tell the tracker the board may be granted (BoardReady, naming the next idle worker's standby lane). */
  | { readonly kind: "boardReady" }
  /** Tell the tracker how a session ended on this side (session_ended): cleanly (null), or why not. */
  | { readonly kind: "sessionEnded"; readonly sessionId: string; readonly reason: FarmError | null }
  /** Tell the tracker a host reached the session's worker (LaneOpened, direct). */
  | { readonly kind: "laneOpened"; readonly sessionId: string }
  /** The serving worker's count of its session's lane bytes (totals): the shell checks them (lane-bytes.ts) and tells the tracker. */
  | { readonly kind: "laneBytes"; readonly worker: WorkerId; readonly sessionId: string; readonly toBoard: number; readonly fromBoard: number }
  /** Tell the tracker the board's health (a canary's verdict). */
  | { readonly kind: "health"; readonly report: HealthReport }
  /** A worker no session ran in died: log it, and tell the tracker the board's infrastructure failed. */
  | {
      readonly kind: "workerDied";
      readonly worker: WorkerId;
      readonly code: number | null;
      readonly signal: NodeJS.Signals | null;
      readonly report: HealthReport;
    }
  /** Log that a session waits for a worker. */
  | { readonly kind: "sessionWaits"; readonly sessionId: string }
  /** Metrics: a session ended, with its reason's code ("OK": cleanly). Once a session. */
  | { readonly kind: "countEnd"; readonly reason: string }
  /** Metrics: the worker said ready (its start time, from its fork). */
  | { readonly kind: "countReady"; readonly worker: WorkerId }
  /** Metrics: a serving worker's counters. */
  | { readonly kind: "countCalls"; readonly calls: number; readonly timeEvaluations: number; readonly errors: Readonly<Record<string, number>> };

export type PoolStep =
  | { readonly outcome: "applied"; readonly state: PoolMachineState; readonly effects: readonly PoolEffect[] }
  /** Nothing changes; `why` says why the event has no effect here. */
  | { readonly outcome: "ignored"; readonly state: PoolMachineState; readonly effects: readonly []; readonly why: string };

/** A new board's pool: no worker yet (`fill` starts them); the canary timer armed if it runs. */
export function begin(config: PoolConfig): { state: PoolMachineState; effects: PoolEffect[] } {
  const canary = config.canaryIntervalMs > 0;
  return {
    state: { config, endGraceMs: config.endGraceMs, workers: [], waiting: undefined, closed: false, ended: [], nextWorker: 0, canaryArmed: canary },
    effects: canary ? [{ kind: "startTimer", timer: { name: "canary" }, ms: config.canaryIntervalMs }] : [],
  };
}

/** The idle worker whose standby lane is `lanePort`, else the first idle one. */
export function nextIdle(state: PoolMachineState, lanePort = 0): WorkerRecord | undefined {
  let first: WorkerRecord | undefined;
  for (const w of state.workers) {
    if (w.state !== "idle") continue;
    if (lanePort && w.lanePort === lanePort) return w;
    first ??= w;
  }
  return first;
}

/** Workers per state, every state present. */
export function workerStates(state: PoolMachineState): Record<WorkerState, number> {
  const counts = Object.fromEntries(WORKER_STATES.map((s) => [s, 0])) as Record<WorkerState, number>;
  for (const w of state.workers) counts[w.state]++;
  return counts;
}

/** The timers armed now, so that a spec (or a shell) can check they are the ones it holds. */
export function armedTimers(state: PoolMachineState): PoolTimer[] {
  const timers: PoolTimer[] = state.canaryArmed ? [{ name: "canary" }] : [];
  for (const w of state.workers) if (w.graceArmed) timers.push({ name: "grace", worker: w.id });
  return timers;
}

/** The worker that serves `sessionId` (taken or being assigned). */
export function servingOf(state: PoolMachineState, sessionId: string): WorkerRecord | undefined {
  return state.workers.find((w) => w.state === "serving" && w.sessionId === sessionId);
}

export function step(state: PoolMachineState, event: PoolEvent): PoolStep {
  switch (event.kind) {
    case "fill":
      return applied(...fill(new Change(state)));
    case "spawned": {
      const w = find(state, event.worker);
      if (!w) return ignored(state, `worker ${event.worker} has gone`);
      return applied(...new Change(state).update(w, { pid: event.pid }).done());
    }
    case "spawnFailed":
      if (!find(state, event.worker)) return ignored(state, `worker ${event.worker} has gone`);
      // Not refilled here: a spawn that failed (every uid taken) would fail again at once, for ever.
      return applied(...new Change(state).remove(event.worker).done());
    case "message":
      return judge(state, event.worker, event.msg);
    case "standbyOpened": {
      const w = find(state, event.worker);
      if (w?.state !== "starting") return ignored(state, `worker ${event.worker} is ${w ? w.state : "gone"}: it died while its standby lane opened`);
      const c = new Change(state).update(w, { lanePort: event.port });
      return applied(...becameIdle(c, c.get(w.id)!));
    }
    case "channelBroken": {
      const w = find(state, event.worker);
      if (!w || w.state === "exiting")
        return ignored(state, `worker ${event.worker} is ${w ? "being killed" : "gone"}: what its channel does no longer matters`);
      return applied(...breach(new Change(state), w, event.error));
    }
    case "laneBroken": {
      const w = state.workers.find((x) => x.state === "serving" && x.sessionId === event.sessionId);
      if (!w) return ignored(state, `no worker of board ${state.config.boardName} serves session ${event.sessionId}`);
      return applied(...breach(new Change(state), w, event.error));
    }
    case "exited":
      return exited(state, event);
    case "assign":
      if (servingOf(state, event.sessionId)) return ignored(state, `session ${event.sessionId}'s worker took it by its ticket already`);
      if (state.ended.includes(event.sessionId))
        return ignored(state, `session ${event.sessionId} was taken by its ticket and ended before its assignment came`);
      return applied(...assign(new Change(state), event));
    case "claimed":
      return claimed(state, event);
    case "folderMade": {
      const w = find(state, event.worker);
      if (w?.assigning?.phase !== "folder") return ignored(state, `worker ${event.worker} awaits no session folder`);
      const c = new Change(state).update(w, { assigning: { ...w.assigning, phase: "message" } });
      const { token, route, lease } = w.assigning;
      return applied(...c.effect({ kind: "sendAssign", worker: w.id, sessionId: w.sessionId!, token, route, ...(lease ? { lease } : {}) }).done());
    }
    case "folderFailed": {
      const w = find(state, event.worker);
      if (w?.assigning?.phase !== "folder") return ignored(state, `worker ${event.worker} awaits no session folder`);
      const sessionId = w.sessionId!;
      const c = new Change(state).update(w, { state: "idle", sessionId: undefined, folder: undefined, assigning: undefined });
      c.effect({ kind: "countEnd", reason: "INTERNAL" }, { kind: "sessionEnded", sessionId, reason: event.error });
      for (const lane of w.assigning.lanes) c.effect({ kind: "dropLane", lane });
      // The worker never heard of the session: it is as idle as it was, and the tracker, which granted the board, hears so.
      if (!anyServing(c.state)) c.effect({ kind: "boardReady" });
      return applied(...c.done());
    }
    case "assignSent": {
      const w = find(state, event.worker);
      if (w?.assigning?.phase !== "message") return ignored(state, `worker ${event.worker} was sent no assignment`);
      const { lanes } = w.assigning;
      const sessionId = w.sessionId!;
      if (!event.delivered) {
        const c = new Change(state).update(w, { assigning: undefined });
        kill(c, c.get(w.id)!, "SIGKILL", "RUNTIME_CRASH");
        c.effect({
          kind: "sessionEnded",
          sessionId,
          reason: new FarmError("RUNTIME_CRASH", `the session worker (pid ${w.pid}) went away before it took the session`),
        });
        for (const lane of lanes) c.effect({ kind: "dropLane", lane });
        return applied(...c.done());
      }
      const c = new Change(state).update(w, { assigning: undefined });
      // No spare is forked here: a clean session gives this worker back, and a
      // tainted one announces itself ("foreign_code") so its successor boots early.
      if (nextIdle(c.state)) c.effect({ kind: "boardReady" });
      for (const lane of lanes) c.effect({ kind: "handLane", worker: w.id, sessionId, lane });
      return applied(...c.done());
    }
    case "laneArrived": {
      const { sessionId, lane } = event;
      if (state.waiting?.sessionId === sessionId) {
        return applied({ ...state, waiting: { ...state.waiting, lanes: [...state.waiting.lanes, lane] } }, []);
      }
      const w = servingOf(state, sessionId);
      if (!w) return ignored(state, `no worker of board ${state.config.boardName} serves session ${sessionId}`);
      if (w.assigning) return applied(...new Change(state).update(w, { assigning: { ...w.assigning, lanes: [...w.assigning.lanes, lane] } }).done());
      return applied(state, [{ kind: "handLane", worker: w.id, sessionId, lane }]);
    }
    case "endSession":
      return endSession(state, event.sessionId, event.reason);
    case "requestDone": {
      const w = find(state, event.worker);
      if (!w) return ignored(state, `worker ${event.worker} has gone: nobody waits for the reply`);
      const c = new Change(state).update(w, { pending: w.pending - 1 });
      // Answered only while it serves: a worker being killed gets nothing more.
      if (w.state === "serving") c.effect({ kind: "send", worker: w.id, msg: event.reply });
      return applied(...c.done());
    }
    case "timerFired":
      return timerFired(state, event.timer);
    case "endGrace":
      return applied({ ...state, endGraceMs: event.ms }, []);
    case "trackerLost": {
      const c = new Change(state);
      for (const w of state.workers) if (w.state === "serving") kill(c, w, "SIGKILL", "AGENT_LOST");
      return applied(...c.done());
    }
    case "close": {
      if (state.closed) return ignored(state, `board ${state.config.boardName}'s pool is closed already`);
      const c = new Change({ ...state, closed: true, waiting: undefined, canaryArmed: false });
      if (state.canaryArmed) c.effect({ kind: "cancelTimer", timer: { name: "canary" } });
      for (const lane of state.waiting?.lanes ?? []) c.effect({ kind: "dropLane", lane });
      for (const w of state.workers) {
        for (const lane of w.assigning?.lanes ?? []) c.effect({ kind: "dropLane", lane });
        if (w.graceArmed) c.effect({ kind: "cancelTimer", timer: { name: "grace", worker: w.id } });
        c.update(w, { state: "exiting", expectedExit: true, folder: undefined, assigning: undefined, graceArmed: false });
        // Now, not at its exit: the agent may be exiting, and a kernel's children have no parent-death signal.
        c.effect({ kind: "kill", worker: w.id, signal: "SIGKILL", group: false }, { kind: "reapNow", worker: w.id, folder: w.folder });
      }
      return applied(...c.effect({ kind: "removeLateFolders" }).done());
    }
  }
}

/** A well-formed message from a worker: acted on if it is in scope for the worker's state, else a breach. */
function judge(state: PoolMachineState, id: WorkerId, msg: WorkerMessage): PoolStep {
  const w = find(state, id);
  if (!w) return ignored(state, `worker ${id} has gone`);
  if (w.state === "exiting") return ignored(state, `worker ${id} is being killed: nothing it says matters`);
  const serving = w.state === "serving";
  const ownSession = (sessionId: string) => serving && sessionId === w.sessionId;
  const c = new Change(state);
  const out = (why: string) => applied(...breach(c, w, workerProtocolError(why)));
  switch (msg.kind) {
    case "ready": {
      if (w.state !== "starting") return out(`"ready" from a ${w.state} worker`);
      c.update(w, { canaryAsked: false }).effect({ kind: "countReady", worker: id });
      // Its standby lane first: the readiness the tracker hears names it.
      if (state.config.standby) return applied(...c.effect({ kind: "openStandby", worker: id }).done());
      return applied(...becameIdle(c, c.get(id)!));
    }
    case "canary": {
      // Only from a process no tenant's code ever ran in, and only the verdict it was asked for.
      if (w.nativeCode) return out("a canary verdict from a worker that loaded a tenant's native code");
      if (!w.canaryAsked) return out("a canary verdict nobody asked for");
      c.update(w, { canaryAsked: false });
      const m = msg.m;
      if (m.ran) c.effect({ kind: "health", report: { kind: "canary", ok: m.ok, reason: m.detail, durationMs: m.duration_ms, kernelNs: m.kernel_ns } });
      return applied(...c.done());
    }
    case "foreign_code":
      if (!ownSession(msg.m.session_id)) return out(`foreign_code for session ${msg.m.session_id}, which it does not serve`);
      c.update(w, { nativeCode: true });
      // This worker will not come back: boot its successor while the session runs.
      return applied(...fill(c));
    case "counters":
      if (!serving) return out(`counters from a ${w.state} worker`);
      return applied(...c.effect({ kind: "countCalls", calls: msg.m.calls, timeEvaluations: msg.m.time_evaluations, errors: msg.m.errors }).done());
    case "lane_opened":
      if (!ownSession(msg.m.session_id)) return out(`lane_opened for session ${msg.m.session_id}, which it does not serve`);
      // Once a session: the tracker hears of a lane once, however often a worker says it.
      if (w.laneOpened) return ignored(state, `session ${msg.m.session_id}'s lane was reported open already`);
      return applied(...c.update(w, { laneOpened: true }).effect({ kind: "laneOpened", sessionId: msg.m.session_id }).done());
    case "lane_bytes":
      if (!ownSession(msg.m.session_id)) return out(`lane_bytes for session ${msg.m.session_id}, which it does not serve`);
      return applied(...c.effect({ kind: "laneBytes", worker: id, sessionId: msg.m.session_id, toBoard: msg.m.to_board, fromBoard: msg.m.from_board }).done());
    case "store_keep":
    case "store_take":
    case "program_fpga":
    case "output_read":
      if (!serving) return out(`${msg.kind} from a ${w.state} worker`);
      if (msg.kind === "program_fpga" && state.config.kind !== "vta") return out(`program_fpga on a ${state.config.kind} board`);
      if (w.pending >= WORKER_MAX_PENDING_REQUESTS) return out(`more than ${WORKER_MAX_PENDING_REQUESTS} requests to the agent at once`);
      return applied(
        ...c
          .update(w, { pending: w.pending + 1 })
          .effect({ kind: "serveRequest", worker: id, request: msg })
          .done(),
      );
    case "ended":
      if (!ownSession(msg.m.session_id)) return out(`ended for session ${msg.m.session_id}, which it does not serve`);
      return applied(...ended(c, w, msg.m.error ? FarmError.fromWire(msg.m.error) : null, msg.m.reusable));
  }
}

/** A worker admitted a session's host by the ticket alone: the session is its own now, if the ticket opens it. */
function claimed(state: PoolMachineState, e: Extract<PoolEvent, { kind: "claimed" }>): PoolStep {
  const w = find(state, e.worker);
  if (!w) return ignored(state, `worker ${e.worker} has gone`);
  if (w.state === "exiting") return ignored(state, `worker ${e.worker} is being killed: nothing it says matters`);
  const c = new Change(state);
  if (e.error) return applied(...breach(c, w, workerProtocolError(`it took session ${e.sessionId} by a ticket that does not open it: ${e.error.message}`)));
  if (w.state === "serving" && w.sessionId === e.sessionId) return judge(state, w.id, { kind: "lane_opened", m: { session_id: e.sessionId, ticket: "" } });
  if (w.state !== "idle") return applied(...breach(c, w, workerProtocolError(`it took session ${e.sessionId} by its ticket while ${w.state}`)));
  c.update(w, { state: "serving", sessionId: e.sessionId, folder: e.sessionId, counted: false, laneOpened: true, assigning: undefined });
  c.effect({ kind: "adoptFolder", worker: w.id, sessionId: e.sessionId }, { kind: "laneOpened", sessionId: e.sessionId });
  if (nextIdle(c.state)) c.effect({ kind: "boardReady" });
  return applied(...c.done());
}

/** The serving worker reported its session's end: it serves again, or goes. */
function ended(c: Change, w: WorkerRecord, error: FarmError | null, reusable: boolean): [PoolMachineState, PoolEffect[]] {
  const sessionId = w.sessionId!;
  if (w.graceArmed) c.effect({ kind: "cancelTimer", timer: { name: "grace", worker: w.id } });
  tally(c, w, error?.code ?? "OK");
  // The tracker waits for this to tell a clean close from a dead worker.
  c.effect({ kind: "sessionEnded", sessionId, reason: error });
  c.update(w, { sessionId: undefined, folder: undefined, graceArmed: false });
  const { config, closed } = c.state;
  // Its offer to serve again is believed only of a process no tenant's native code ran in.
  const again = reusable && !w.nativeCode;
  let exiting = false;
  if (again && idleCount(c.state) < config.warm && !closed) {
    const idle = c.update(w, { state: "idle" }).get(w.id)!;
    // Its next session's folder after the readiness is on its way (a tmpfs to mount), and long before a host can reach it.
    if (!serveWaiting(c, idle)) readyAfter(c, true).effect({ kind: "prepareFolder", worker: w.id });
  } else {
    // An extra clean one is told to go; any other is not waited for to exit by itself: it may be its tenant's now.
    kill(c, c.get(w.id)!, again ? "SIGTERM" : "SIGKILL");
    exiting = true;
    readyAfter(c, true);
  }
  // The folder goes after the board's readiness is on its way: its removal (a tmpfs to detach) is off the next grant's path.
  // One its kernel may still be changing (it is being killed) waits for its exit, where that matters (reap).
  if (exiting && config.ownUids) c.update(c.get(w.id)!, { folder: sessionId });
  else c.effect({ kind: "removeSessionFolder", sessionId });
  return c.done();
}

/** Fill, then tell the tracker the board may be granted: if a worker is idle (and, `evenServing` false, no session runs). */
function readyAfter(c: Change, evenServing: boolean): Change {
  fill(c);
  if (nextIdle(c.state) && (evenServing || !anyServing(c.state))) c.effect({ kind: "boardReady" });
  return c;
}

function endSession(state: PoolMachineState, sessionId: string, reason: FarmError | null): PoolStep {
  if (state.waiting?.sessionId === sessionId) {
    const effects = state.waiting.lanes.map((lane): PoolEffect => ({ kind: "dropLane", lane }));
    return applied({ ...state, waiting: undefined }, effects);
  }
  const w = servingOf(state, sessionId);
  if (!w) return ignored(state, `no worker of board ${state.config.boardName} serves session ${sessionId}`);
  const c = new Change(state);
  // Any end of a session its worker has not taken yet leaves a worker that half knows it: it goes.
  if (reason || w.assigning) {
    for (const lane of w.assigning?.lanes ?? []) c.effect({ kind: "dropLane", lane });
    kill(c, c.update(w, { assigning: undefined }).get(w.id)!, "SIGKILL", reason?.code ?? "OK");
    return applied(...c.done());
  }
  if (w.graceArmed) return ignored(state, `session ${sessionId} is ending already: its worker's report is awaited`);
  // A clean end lets the worker close its lane and report; it is killed if it does not within the grace.
  c.update(w, { graceArmed: true });
  return applied(
    ...c
      .effect(
        { kind: "send", worker: w.id, msg: { end: { session_id: sessionId } } },
        { kind: "startTimer", timer: { name: "grace", worker: w.id }, ms: state.endGraceMs },
      )
      .done(),
  );
}

function timerFired(state: PoolMachineState, timer: PoolTimer): PoolStep {
  if (timer.name === "canary") {
    if (!state.canaryArmed) return ignored(state, "the canary timer is not armed");
    const c = new Change(state);
    c.effect({ kind: "startTimer", timer, ms: state.config.canaryIntervalMs });
    // Run by one idle worker that never loaded a tenant's code, when the agent asks (never on a worker's own
    // schedule, so a verdict nobody asked for is a breach).
    const w = state.workers.find((x) => x.state === "idle" && !x.nativeCode && !x.canaryAsked);
    if (w) c.update(w, { canaryAsked: true }).effect({ kind: "send", worker: w.id, msg: { run_canary: {} } });
    return applied(...c.done());
  }
  const w = find(state, timer.worker);
  if (!w?.graceArmed) return ignored(state, `worker ${timer.worker}'s grace timer is not armed`);
  const c = new Change(state).update(w, { graceArmed: false });
  kill(c, c.get(w.id)!, "SIGKILL", "OK");
  return applied(...c.done());
}

function exited(state: PoolMachineState, e: Extract<PoolEvent, { kind: "exited" }>): PoolStep {
  const w = find(state, e.worker);
  if (!w) return ignored(state, `worker ${e.worker} has gone already`);
  const c = new Change(state).remove(w.id);
  if (w.graceArmed) c.effect({ kind: "cancelTimer", timer: { name: "grace", worker: w.id } });
  for (const lane of w.assigning?.lanes ?? []) c.effect({ kind: "dropLane", lane });
  // Its folder: the one of the session it served, or the one it kept for this.
  c.effect({ kind: "reap", worker: w.id, folder: w.folder });
  if (w.state === "serving" && w.sessionId && !w.expectedExit) {
    if (!w.counted) c.effect({ kind: "countEnd", reason: e.death.code });
    c.effect({ kind: "sessionEnded", sessionId: w.sessionId, reason: e.death });
  } else if (!w.expectedExit && !state.closed) {
    const how = e.signal ? `killed by ${e.signal}` : `exited with code ${e.code}`;
    // No kernel of anybody's ran in it: the board's infrastructure is at fault.
    c.effect({
      kind: "workerDied",
      worker: w.id,
      code: e.code,
      signal: e.signal,
      report: { kind: "infra", ok: false, reason: `${w.state} session worker ${w.pid} ${how}`, durationMs: 0, kernelNs: 0 },
    });
  }
  readyAfter(c, false);
  return applied(...c.done());
}

function assign(c: Change, a: Extract<PoolEvent, { kind: "assign" }>): [PoolMachineState, PoolEffect[]] {
  const w = nextIdle(c.state, a.lanePort);
  const session: WaitingSession = { sessionId: a.sessionId, token: a.token, route: a.route, lanes: [], ...(a.lease ? { lease: a.lease } : {}) };
  if (w) return serve(c, w, session);
  const { boardName } = c.state.config;
  if (c.state.closed) {
    return c
      .effect(
        { kind: "countEnd", reason: "INTERNAL" },
        {
          kind: "sessionEnded",
          sessionId: a.sessionId,
          reason: new FarmError("INTERNAL", `board ${boardName} is shutting down; session ${a.sessionId} was not served`),
        },
      )
      .done();
  }
  // The readiness the tracker granted on was sent just before this board's last worker went (a tainted one's
  // exit, seen before the grant arrived): the session takes the next worker that is ready, one being started
  // now if none is. The tracker's open timeout bounds the wait.
  for (const lane of c.state.waiting?.lanes ?? []) c.effect({ kind: "dropLane", lane });
  c.state = { ...c.state, waiting: session };
  fill(c);
  return c.effect({ kind: "sessionWaits", sessionId: a.sessionId }).done();
}

/** `w` takes a session: its folder first (made by the agent: the workers' root is closed to them). */
function serve(c: Change, w: WorkerRecord, s: WaitingSession): [PoolMachineState, PoolEffect[]] {
  c.update(w, {
    state: "serving",
    sessionId: s.sessionId,
    folder: s.sessionId,
    counted: false,
    laneOpened: false,
    assigning: { phase: "folder", token: s.token, route: s.route, lanes: s.lanes, ...(s.lease ? { lease: s.lease } : {}) },
  });
  return c.effect({ kind: "makeSessionFolder", worker: w.id, sessionId: s.sessionId }).done();
}

/** A worker became idle and a session waits: it takes it. True when one did. */
function serveWaiting(c: Change, w: WorkerRecord): boolean {
  const s = c.state.waiting;
  if (!s) return false;
  c.state = { ...c.state, waiting: undefined };
  serve(c, w, s);
  return true;
}

function becameIdle(c: Change, w: WorkerRecord): [PoolMachineState, PoolEffect[]] {
  const idle = c.update(w, { state: "idle" }).get(w.id)!;
  if (serveWaiting(c, idle)) return c.done();
  if (!anyServing(c.state)) c.effect({ kind: "boardReady" });
  c.effect({ kind: "prepareFolder", worker: w.id });
  return c.done();
}

/** Starts workers until `warm` are idle or starting. */
function fill(c: Change): [PoolMachineState, PoolEffect[]] {
  const { warm } = c.state.config;
  while (!c.state.closed && idleCount(c.state) + c.state.workers.filter((w) => w.state === "starting").length < warm) {
    const id = c.state.nextWorker;
    // A new worker runs its board's canary before it says ready.
    const w: WorkerRecord = {
      id,
      state: "starting",
      pid: undefined,
      sessionId: undefined,
      assigning: undefined,
      folder: undefined,
      expectedExit: false,
      counted: false,
      lanePort: undefined,
      nativeCode: false,
      canaryAsked: true,
      pending: 0,
      laneOpened: false,
      graceArmed: false,
    };
    c.state = { ...c.state, workers: [...c.state.workers, w], nextWorker: id + 1 };
    c.effect({ kind: "spawn", worker: id });
  }
  return c.done();
}

/**
 * `w` broke the channel's contract: its processes are killed and only its
 * own session ends, with the reason; the agent and the board's other
 * workers serve on.
 */
function breach(c: Change, w: WorkerRecord, error: FarmError): [PoolMachineState, PoolEffect[]] {
  const sessionId = w.state === "serving" ? w.sessionId : undefined;
  c.effect({ kind: "cutOff", worker: w.id, sessionId, state: w.state, error });
  for (const lane of w.assigning?.lanes ?? []) c.effect({ kind: "dropLane", lane });
  // What its kernel forked goes now too (every process of its uid goes when its exit is reaped).
  kill(c, c.update(w, { assigning: undefined }).get(w.id)!, "SIGKILL", sessionId ? error.code : undefined, true);
  if (sessionId) c.effect({ kind: "sessionEnded", sessionId, reason: error });
  return c.done();
}

/** `w` goes: counted first (once a session) with `reason` when given, its grace disarmed; its exit is not news. */
function kill(c: Change, w: WorkerRecord, signal: "SIGKILL" | "SIGTERM", reason?: string, group = false): void {
  if (reason !== undefined) tally(c, w, reason);
  c.update(c.get(w.id)!, { state: "exiting", expectedExit: true, graceArmed: false });
  c.effect({ kind: "kill", worker: w.id, signal, group });
  if (w.graceArmed) c.effect({ kind: "cancelTimer", timer: { name: "grace", worker: w.id } });
}

/** Counts the end of `w`'s current session in the metrics, once. */
function tally(c: Change, w: WorkerRecord, reason: string): void {
  if (c.get(w.id)!.counted) return;
  c.update(w, { counted: true }).effect({ kind: "countEnd", reason });
}

function idleCount(state: PoolMachineState): number {
  return state.workers.filter((w) => w.state === "idle").length;
}

function anyServing(state: PoolMachineState): boolean {
  return state.workers.some((w) => w.state === "serving");
}

function find(state: PoolMachineState, id: WorkerId): WorkerRecord | undefined {
  return state.workers.find((w) => w.id === id);
}

/** One step's state as it is built, and its effects in order. */
class Change {
  private readonly effects: PoolEffect[] = [];

  constructor(public state: PoolMachineState) {}

  get(id: WorkerId): WorkerRecord | undefined {
    return find(this.state, id);
  }

  update(w: WorkerRecord, patch: Partial<Omit<WorkerRecord, "id">>): this {
    this.state = { ...this.state, workers: this.state.workers.map((x) => (x.id === w.id ? { ...x, ...patch } : x)) };
    return this;
  }

  remove(id: WorkerId): this {
    this.state = { ...this.state, workers: this.state.workers.filter((x) => x.id !== id) };
    return this;
  }

  effect(...effects: PoolEffect[]): this {
    this.effects.push(...effects);
    return this;
  }

  done(): [PoolMachineState, PoolEffect[]] {
    return [this.state, this.effects];
  }
}

/** How many ended sessions a pool remembers: an assignment is never more than a session or two behind its board's ends. */
export const ENDED_KEPT = 16;

function applied(state: PoolMachineState, effects: readonly PoolEffect[]): PoolStep {
  const ended = effects.flatMap((e) => (e.kind === "sessionEnded" ? [e.sessionId] : []));
  if (ended.length > 0) state = { ...state, ended: [...state.ended, ...ended].slice(-ENDED_KEPT) };
  return { outcome: "applied", state, effects };
}

function ignored(state: PoolMachineState, why: string): PoolStep {
  return { outcome: "ignored", state, effects: [], why };
}
