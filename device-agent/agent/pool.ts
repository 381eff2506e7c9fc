/**
 * Session workers of one board. Keeps `warm` started workers idle so a grant
 * never waits for a process start, hands each assignment to one, and turns a
 * worker's death into a session end with the reason (crash, call timeout).
 *
 * Worker states: `starting` → `idle` → `serving` → (`idle` again when it ran
 * no native code | exit); any state → exit. Which event moves a worker where,
 * and what is done on the way, is decided by a pure machine
 * (device-agent/agent/pool-machine.ts, whose TSDoc holds the transition table
 * and whose specs cover it); BoardPool is its shell: it owns the processes,
 * their channels, the session folders, the lanes' sockets and the timers.
 *
 * A worker runs tenants' code, so the pool believes nothing it says beyond
 * what concerns its own session (worker-channel.ts carries and decodes; the
 * machine judges each message against the worker's state):
 *
 * | message       | accepted from                                   | the agent then                         |
 * |---------------|-------------------------------------------------|----------------------------------------|
 * | ready         | a starting worker, once                         | lets it serve                          |
 * | canary        | a worker that never loaded native code, asked to run one (at start, or `run_canary` while idle) | reports the board's health |
 * | foreign_code  | the serving worker, for its session             | never gives that process another session |
 * | counters      | the serving worker                              | counts (bounded, known codes only)     |
 * | lane_opened   | the serving worker, for its session; or an idle one with the session's ticket, which the agent checks too (signed by the tracker for this board and this very worker) | tells the tracker; a ticket's session is that worker's now |
 * | lane_bytes    | the serving worker, for its session, within what a lane carries (lane-bytes.ts) | tells the tracker (SessionBytes) |
 * | store_keep / store_take / program_fpga | the serving worker, a few at a time | acts in its session's folder only, on names it chose or checked |
 * | output_read   | the serving worker, a few at a time             | answers with what that worker printed since its session began (session-output.ts), one bounded piece |
 * | ended         | the serving worker, for its session             | reuses it only if it never loaded native code and offers to serve again |
 *
 * What a worker prints (stdout, stderr) is its tenant's: the agent reads its
 * pipes, keeps the serving session's last 1 MiB for that session's host
 * (`remote.output()`, through output_read), and logs it only as a bounded,
 * escaped field of its own JSON lines (worker-output.ts); the watchdog's
 * TIMEOUT marker it reads and never shows.
 *
 * Anything else — bytes that do not decode, a message out of its state or
 * naming another session — kills that worker's processes and ends only its
 * own session: PROTOCOL_ERROR, logged with the worker's pid and uid.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes, type KeyObject } from "node:crypto";
import { readSync, rmSync } from "node:fs";
import type { Readable } from "node:stream";
import { basename, join } from "node:path";
import { createServer, type AddressInfo, type Socket } from "node:net";
import { FarmError, SESSION_END_GRACE_MS, workerProtocolError, type AgentToWorker, type Route, type WorkerMessage } from "../../protos/index.ts";
import { NamedTimers, checkTicket, ticketKey, traceGrant, type Logger } from "../../runtime/index.ts";
import type { BoardMetrics } from "./metrics.ts";
import { effectiveLimits, workerCommand, workerEnv, type SandboxPlan, type UidAllocator, type WorkerDirs } from "./sandbox.ts";
import { quotaError, type SessionDisk } from "../common/session-disk.ts";
import { readSessionFile, type SessionFile } from "../common/session-file.ts";
import { workerDebugArgs, workerNode, type WorkerEntry } from "./worker-entry.ts";
import type { ContentStore } from "./content-store.ts";
import type { WorkerConfig } from "../common/worker-spawn.ts";
import { WORKER_STDIO, WorkerChannel } from "./worker-channel.ts";
import { descriptorOf } from "../common/handle-passing.ts";
import { SESSION_OUTPUT_BYTES, SessionOutput } from "./session-output.ts";
import { LaneByteCounts } from "./lane-bytes.ts";
import { OutputBudget, PendingOutput, takeTimeoutMarker } from "./worker-output.ts";
import {
  begin,
  nextIdle,
  step,
  workerStates,
  type HealthReport,
  type LaneId,
  type PoolEffect,
  type PoolEvent,
  type PoolMachineState,
  type PoolStep,
  type PoolTimer,
  type SessionLease,
  type WorkerId,
  type WorkerRequest,
  type WorkerState,
} from "./pool-machine.ts";

export type { HealthReport, WorkerState } from "./pool-machine.ts";

/** How the agent's workers are confined (device-agent/agent/sandbox.ts), shared by its boards' pools. */
export interface WorkerSandbox {
  readonly plan: SandboxPlan;
  readonly uids: UidAllocator;
  readonly dirs: WorkerDirs;
  /** The agent's content store, which workers use through their channel (store_keep, store_take). */
  readonly store: ContentStore;
  /** Each session's folder a tmpfs of the quota (as root with uids of their own; session-disk.ts); absent: plain folders. */
  readonly disk?: SessionDisk;
}

/** How much of a dead worker's stderr goes into the error message. */
const STDERR_TAIL_BYTES = 2048;
/** How long the agent gathers a worker's output into one log line. */
const LOG_GATHER_MS = 100;
/** The most of a session's output one output_read answer carries: well within WORKER_MESSAGE_MAX_BYTES. */
const OUTPUT_READ_BYTES = 48 << 10;
/** Where drainOutput reads a pipe (printed() copies what it keeps). */
const DRAIN_BUFFER = Buffer.allocUnsafe(64 << 10);
/** After a worker's exit, how long its last messages may take to arrive (a kernel's leftover child can hold the channel open). */
const CHANNEL_DRAIN_MS = 250;

export interface PoolEvents {
  /** The board has an idle worker and no session: it may be granted (`standbyPort` names that worker's standby lane). */
  ready(boardName: string): void;
  /** A host reached a session's worker at its standby lane. */
  laneOpened(sessionId: string): void;
  /** A session's lane carried this much so far (totals), as its worker counted them and the agent believed (lane-bytes.ts). */
  laneBytes?(sessionId: string, toBoard: number, fromBoard: number): void;
  /** A session ended on this side: closed cleanly (null), or the worker died / timed out. */
  sessionEnded(sessionId: string, reason: FarmError | null): void;
  /** A canary ran, or the board's infrastructure failed (a worker died or did not start outside any session). */
  health(boardName: string, report: HealthReport): void;
  /** A session asks to load a bitstream into the board's FPGA (paths of its files); the agent checks, loads and relabels. */
  programFpga(boardName: string, bitstream: SessionFile, config: SessionFile): Promise<{ sha256: string; hardware: string }>;
}

/** A worker's process and what the agent holds of it; its state is the machine's (pool-machine.ts WorkerRecord). */
interface WorkerProcess {
  /** Its name in the tickets the tracker signs for it (BoardReady.worker_id): random, never reused. */
  readonly workerId: string;
  /** Its next session's folder, made while it is idle (prepareFolder); the session that comes takes it. */
  prepared: string | undefined;
  readonly child: ChildProcess;
  readonly channel: WorkerChannel;
  /** Its own uid (the agent runs as root), held until every process it ran is dead. */
  readonly uid: number | undefined;
  /** Its HOME and TMPDIR, removed when it exits. */
  readonly home: string;
  /** performance.now() at fork, for the start-time histogram. */
  readonly forkedAt: number;
  /** The end of what the worker printed (stdout and stderr), for a crash's report to its session's host. */
  stderrTail: string;
  /** What the watchdog's marker said: a call ran past its timeout (worker/watchdog.ts). */
  timedOut: string | undefined;
  /** What the worker printed since its current session's assignment, for that session's host (output_read). */
  sessionOutput: SessionOutput | undefined;
  /** Names of stored files handed to its sessions (agent-chosen, never the worker's). */
  storeSeq: number;
  /** How much of what it prints the agent's log may still show. */
  readonly logBudget: OutputBudget;
  /** What it printed since the agent's last "worker output" line, per stream; `logTimer`: that line is due. */
  readonly unlogged: Record<"stdout" | "stderr", PendingOutput>;
  logTimer: NodeJS.Timeout | undefined;
}

/** A lane the agent holds for a session's worker: the socket and the bytes read past its hello. */
interface HeldLane {
  readonly socket: Socket;
  readonly rest: Buffer;
  readonly kind: "direct" | "relay" | "grpc" | "tvm";
}

/**
 * The shell around one board's pool machine (pool-machine.ts, whose TSDoc
 * holds the transition table): it owns the worker processes, their channels,
 * the session folders, the lanes' sockets and the timers, turns what they do
 * into the machine's events and performs the effects that come back.
 */
export class BoardPool {
  private machine: PoolMachineState;
  private readonly procs = new Map<WorkerId, WorkerProcess>();
  /** Each session folder that exists, by session id. */
  private readonly folders = new Map<string, string>();
  private readonly lanes = new Map<LaneId, HeldLane>();
  /** What each worker said its current session's lane carried, as far as it is believed. */
  private readonly laneBytes = new LaneByteCounts();
  private nextLane = 0;
  /** The last lane handed over, and whether its worker's channel took it (giveLane's answer). */
  private lastHanded: { lane: LaneId; sent: boolean } | undefined;
  private readonly timers = new NamedTimers<string>();
  /** Session folders whose tmpfs is being detached off the event loop (removeDir). */
  private readonly detaching = new Set<string>();
  /** Workers started, for names of homes where workers have no uid of their own. */
  private started = 0;
  /** Session folders of exited workers waiting for their uid's last processes to die (reap()), with that uid. */
  private readonly lateRemovals = new Map<string, number>();
  /** The tracker's ticket key as the agent last registered (setTicketKey); undefined: workers wait for their assignments. */
  private tickets: { key: KeyObject; message: AgentToWorker } | undefined;

  constructor(
    private readonly config: WorkerConfig,
    private readonly entry: WorkerEntry,
    warm: number,
    private readonly events: PoolEvents,
    private readonly log: Logger,
    private readonly sandbox: WorkerSandbox,
    /** The direct lane's interface, where each worker gets a standby lane of its own; undefined: no standby lanes. */
    private readonly standbyHost: string | undefined,
    private readonly metrics?: BoardMetrics,
  ) {
    const { state, effects } = begin({
      boardName: config.boardName,
      kind: config.kind,
      warm,
      standby: standbyHost !== undefined,
      ownUids: sandbox.plan.users !== undefined,
      canaryIntervalMs: config.canaryIntervalMs,
      endGraceMs: SESSION_END_GRACE_MS,
    });
    this.machine = state;
    metrics?.watchWorkers(() => this.workerStates());
    this.perform(effects);
  }

  /** The session end grace (protos/routes.ts), as the tracker said: a cleanly ended session's worker gets this long to report before it is killed. */
  get endGraceMs(): number {
    return this.machine.endGraceMs;
  }

  set endGraceMs(ms: number) {
    this.feed({ kind: "endGrace", ms });
  }

  /** Workers per state, every state present. */
  workerStates(): Record<WorkerState, number> {
    return workerStates(this.machine);
  }

  get boardName(): string {
    return this.config.boardName;
  }

  get hasIdle(): boolean {
    return nextIdle(this.machine) !== undefined;
  }

  /** The standby lane's port of the worker that takes the next session; 0 when it has none. */
  get standbyPort(): number {
    return nextIdle(this.machine)?.lanePort ?? 0;
  }

  /** That worker's name, for the ticket the tracker signs for it (BoardReady.worker_id); "" when none is idle. */
  get standbyWorkerId(): string {
    const w = nextIdle(this.machine);
    return (w && this.procs.get(w.id)?.workerId) ?? "";
  }

  /**
   * The tracker's ticket key (Registered.ticket_key) and how far its clock is
   * ahead of this one: every worker with a standby lane gets them, and admits
   * its sessions' hosts by their tickets from now on.
   */
  setTicketKey(raw: Uint8Array, trackerClockOffsetMs: number): void {
    let key: KeyObject;
    try {
      key = ticketKey(raw);
    } catch (err) {
      // A tracker of another version: its workers wait for their assignments, as before.
      this.tickets = undefined;
      this.log.warn({ board: this.boardName, err: (err as Error).message }, "the tracker sent no ticket key this agent reads: hosts wait for each assignment");
      return;
    }
    const message: AgentToWorker = { ticket_key: { public_key: raw, tracker_clock_offset_ms: trackerClockOffsetMs, end_grace_ms: this.endGraceMs } };
    this.tickets = { key, message };
    for (const w of this.machine.workers) if (w.lanePort) this.procs.get(w.id)?.channel.send(message);
  }

  /** Starts workers until `warm` are idle or starting. */
  fill(): void {
    this.feed({ kind: "fill" });
  }

  /**
   * `lanePort`: the standby lane the grant named; its worker takes the session if it is idle. `sessionTimeoutMs`: the
   * lease's (0: none), counted from now — the tracker sends the assignment as it grants.
   */
  assign(sessionId: string, token: string, route: Route, lanePort = 0, sessionTimeoutMs = 0): void {
    const lease = sessionTimeoutMs > 0 ? { lease: { timeoutMs: sessionTimeoutMs, endsAt: performance.now() + sessionTimeoutMs } } : {};
    // What idle workers printed and the log has not shown yet is no session's: shown now, before one of them takes this one.
    for (const w of this.machine.workers) {
      const p = w.state === "idle" ? this.procs.get(w.id) : undefined;
      if (p?.logTimer) this.logOutput(w.id, p);
    }
    this.feed({ kind: "assign", sessionId, token, route, lanePort, ...lease });
  }

  /** Gives the worker serving `sessionId` its lane (or keeps it for the worker it waits for); false when none does. */
  giveLane(sessionId: string, socket: Socket, rest: Buffer, kind: "direct" | "relay" | "grpc" | "tvm"): boolean {
    const lane = this.nextLane++;
    this.lanes.set(lane, { socket, rest, kind });
    this.lastHanded = undefined;
    if (this.feed({ kind: "laneArrived", sessionId, lane }).outcome === "ignored") {
      this.lanes.delete(lane);
      return false;
    }
    // Kept for its worker (the session waits for one, or its worker has not taken it yet): it will be handed over.
    return this.handedNow(lane) ?? true;
  }

  /** Whether `lane` went to its worker's channel just now; undefined: it was not handed over. */
  private handedNow(lane: LaneId): boolean | undefined {
    return this.lastHanded?.lane === lane ? this.lastHanded.sent : undefined;
  }

  /** The worker serving `sessionId` broke its lane's framing (the agent's grpc bridge cut it), or counted its lane's bytes beyond what a lane carries (lane-bytes.ts): it is cut off and killed, its session ends with `error`. */
  laneBroken(sessionId: string, error: FarmError): void {
    this.feed({ kind: "laneBroken", sessionId, error });
  }

  /** The tracker ended a session: a clean end lets the worker close its lane and report, any other kills it. */
  end(sessionId: string, reason: FarmError | null): void {
    this.feed({ kind: "endSession", sessionId, reason });
  }

  /** Kills every worker (sessions included) and whatever its kernels started. */
  close(): void {
    // What its workers printed and the log has not shown yet, before they go.
    for (const [id, p] of this.procs) {
      this.drainOutput(id, p);
      this.logOutput(id, p);
    }
    this.feed({ kind: "close" });
    // Those still being detached on libuv's threads: the agent removes its scratch folder next, which cannot go while
    // a tmpfs is mounted in it (a second detach of one is harmless).
    for (const dir of this.detaching) this.removeDir(dir, true);
  }

  /** Ends every session in progress (the tracker is gone, its sessions with it). */
  abandonSessions(): void {
    this.feed({ kind: "trackerLost" });
  }

  /**
   * Steps the machine and performs the effects. The new state is in place
   * before any effect runs, so an event an effect causes (an outcome the
   * shell feeds at once, a callback that calls back) meets the state it should.
   */
  private feed(event: PoolEvent): PoolStep {
    const result = step(this.machine, event);
    if (result.outcome === "ignored") return result;
    this.machine = result.state;
    this.perform(result.effects);
    return result;
  }

  private perform(effects: readonly PoolEffect[]): void {
    for (const effect of effects) {
      switch (effect.kind) {
        case "spawn":
          this.spawn(effect.worker);
          break;
        case "openStandby":
          void this.openStandby(effect.worker).then((port) => this.feed({ kind: "standbyOpened", worker: effect.worker, port }));
          break;
        case "makeSessionFolder":
          this.makeSessionFolder(effect.worker, effect.sessionId);
          break;
        case "prepareFolder":
          this.prepareFolder(effect.worker);
          break;
        case "adoptFolder": {
          const p = this.procs.get(effect.worker);
          if (p?.prepared) this.folders.set(effect.sessionId, p.prepared);
          if (p) {
            p.prepared = undefined;
            p.sessionOutput = new SessionOutput(SESSION_OUTPUT_BYTES);
            p.timedOut = undefined;
          }
          this.laneBytes.begin(effect.worker, effect.sessionId, performance.now());
          break;
        }
        case "removeSessionFolder":
          this.removeDir(this.takeFolder(effect.sessionId));
          break;
        case "sendAssign": {
          const dir = this.folders.get(effect.sessionId) ?? "";
          const p = this.procs.get(effect.worker);
          if (p) {
            // What it printed before (logged as no session's: assign()) is no business of this session's.
            p.sessionOutput = new SessionOutput(SESSION_OUTPUT_BYTES);
            p.timedOut = undefined;
          }
          this.laneBytes.begin(effect.worker, effect.sessionId, performance.now());
          const delivered =
            p?.channel.send({ assign: { session_id: effect.sessionId, token: effect.token, dir, route: effect.route, ...this.callBound(effect.lease) } }) ??
            false;
          this.feed({ kind: "assignSent", worker: effect.worker, delivered });
          break;
        }
        case "send":
          this.procs.get(effect.worker)?.channel.send(effect.msg);
          break;
        case "handLane":
          this.handLane(effect.worker, effect.sessionId, effect.lane);
          break;
        case "dropLane":
          this.lanes.get(effect.lane)?.socket.destroy();
          this.lanes.delete(effect.lane);
          break;
        case "serveRequest":
          void this.serveRequest(effect.worker, effect.request).then((reply) => this.feed({ kind: "requestDone", worker: effect.worker, reply }));
          break;
        case "cutOff": {
          const p = this.procs.get(effect.worker);
          p?.channel.stop();
          this.log.warn(
            {
              board: this.boardName,
              session: effect.sessionId ?? null,
              pid: p?.child.pid,
              uid: p?.uid ?? null,
              state: effect.state,
              audit: "worker_protocol",
              err: effect.error.message,
            },
            "a session worker broke the agent's protocol: killed",
          );
          break;
        }
        case "kill": {
          const p = this.procs.get(effect.worker);
          p?.child.kill(effect.signal);
          if (p && effect.group) killGroup(p);
          break;
        }
        case "reap":
          this.reap(effect.worker, effect.folder);
          break;
        case "reapNow":
          this.reapNow(effect.worker, effect.folder);
          break;
        case "removeLateFolders":
          // Folders of workers that exited and whose uid is still being cleared.
          for (const [dir, uid] of this.lateRemovals) {
            this.sandbox.uids.releaseSync(uid);
            this.removeDir(dir, true);
          }
          this.lateRemovals.clear();
          break;
        case "startTimer": {
          const { timer } = effect;
          // The canary's timer alone keeps no agent alive; a session's grace ends with the kill it stands for.
          this.timers.start(timerKey(timer), effect.ms, () => this.feed({ kind: "timerFired", timer }), { unref: timer.name === "canary" });
          break;
        }
        case "cancelTimer":
          this.timers.cancel(timerKey(effect.timer));
          break;
        case "boardReady":
          this.events.ready(this.boardName);
          break;
        case "sessionEnded":
          this.events.sessionEnded(effect.sessionId, effect.reason);
          break;
        case "laneOpened":
          traceGrant("agent: LaneOpened sent");
          this.events.laneOpened(effect.sessionId);
          break;
        case "laneBytes": {
          const refusal = this.laneBytes.report(effect.worker, effect.sessionId, effect.toBoard, effect.fromBoard, performance.now());
          // Out of what a lane carries: a breach of the channel's protocol, as any other (its session ends PROTOCOL_ERROR).
          if (refusal) this.laneBroken(effect.sessionId, workerProtocolError(refusal));
          else this.events.laneBytes?.(effect.sessionId, effect.toBoard, effect.fromBoard);
          break;
        }
        case "health":
          this.events.health(this.boardName, effect.report);
          break;
        case "workerDied": {
          const p = this.procs.get(effect.worker);
          this.log.warn(
            { board: this.boardName, code: effect.code, signal: effect.signal, stderr: p?.stderrTail.slice(-500) ?? "" },
            `idle session worker ${p?.child.pid} died`,
          );
          this.events.health(this.boardName, effect.report);
          break;
        }
        case "sessionWaits":
          this.log.info({ board: this.boardName, session: effect.sessionId }, "a session waits for a worker to be ready");
          break;
        case "countEnd":
          this.metrics?.sessionEnded(effect.reason);
          break;
        case "countReady": {
          const p = this.procs.get(effect.worker);
          if (p) this.metrics?.workerReady((performance.now() - p.forkedAt) / 1e3);
          break;
        }
        case "countCalls":
          this.metrics?.counted({ calls: effect.calls, timeEvaluations: effect.timeEvaluations, errors: effect.errors });
          break;
      }
    }
  }

  private spawn(id: WorkerId): void {
    let uid: number | undefined;
    let home: string;
    try {
      uid = this.sandbox.uids.take();
      home = this.sandbox.dirs.home(uid !== undefined ? String(uid) : `${this.boardName}-${this.started++}`, uid);
    } catch (err) {
      this.log.error({ board: this.boardName, err: (err as Error).message }, "cannot start a session worker");
      void this.sandbox.uids.release(uid);
      this.feed({ kind: "spawnFailed", worker: id });
      return;
    }
    const argv = workerCommand(this.sandbox.plan, this.config.kind, uid, [workerNode(), ...this.entry.execArgv, ...workerDebugArgs(), this.entry.script]);
    const child = spawn(argv[0]!, argv.slice(1), {
      // Never the agent's environment (its tokens, its secrets): only what a worker needs.
      env: workerEnv(process.env, { KFARM_WORKER: JSON.stringify(this.config), HOME: home, TMPDIR: home }),
      cwd: home,
      // Kernels' stdout and stderr come through the agent (and into crash reports),
      // so a worker never holds a descriptor of whoever started the agent.
      // fds 3-5: its channel to the agent (worker-channel.ts), never Node's IPC channel.
      stdio: WORKER_STDIO,
      // A process group of its own: what a kernel forks is killed with it (as root, every process of its uid is).
      detached: true,
    });
    const channel = new WorkerChannel(child, {
      message: (msg) => this.fromWorker(id, msg),
      broken: (error) => this.feed({ kind: "channelBroken", worker: id, error }),
    });
    const p: WorkerProcess = {
      workerId: randomBytes(12).toString("base64url"),
      prepared: undefined,
      child,
      channel,
      uid,
      home,
      forkedAt: performance.now(),
      stderrTail: "",
      timedOut: undefined,
      sessionOutput: undefined,
      storeSeq: 0,
      unlogged: { stdout: new PendingOutput(), stderr: new PendingOutput() },
      logTimer: undefined,
      logBudget: new OutputBudget(() =>
        this.log.warn(
          { board: this.boardName, session: this.sessionOf(id) ?? null, pid: child.pid },
          "a session worker prints faster than the agent logs: its output is left out of the log (its session's host still reads it; the next line says how much was left out)",
        ),
      ),
    };
    this.procs.set(id, p);
    this.metrics?.workerSpawned();
    child.stdout!.on("data", (chunk: Buffer) => this.printed(id, p, "stdout", chunk));
    child.stderr!.on("data", (chunk: Buffer) => this.printed(id, p, "stderr", chunk));
    child.on("exit", (code, signal) => {
      // Its last messages (an "ended" just before a tainted worker's exit) may still be in the channel.
      let timer: NodeJS.Timeout | undefined;
      const drained = new Promise<void>((resolve) => (timer = setTimeout(resolve, CHANNEL_DRAIN_MS)));
      void Promise.race([channel.ended, drained]).then(() => {
        clearTimeout(timer);
        channel.stop();
        // Its last words (the watchdog's marker) may still wait in its pipes; what it printed is logged now.
        this.drainOutput(id, p);
        this.logOutput(id, p);
        // Looked at before the session's tmpfs goes: a full one tells why the worker died.
        this.feed({ kind: "exited", worker: id, code, signal, death: this.deathReason(id, p, code, signal) });
        this.procs.delete(id);
        this.laneBytes.forget(id);
      });
    });
    child.on("error", (err) => this.log.error({ board: this.boardName, err: err.message }, "session worker failed to start"));
    this.feed({ kind: "spawned", worker: id, pid: child.pid });
  }

  /**
   * How long a session's calls have (WorkerAssign): until its lease ends,
   * less the end grace, so that a hung call's TIMEOUT — the kill, the
   * agent's report — reaches the tracker before the lease's own end would
   * say SESSION_TIMEOUT. Unbounded where less than a grace is left: the
   * session's end ends such a call.
   */
  private callBound(lease: SessionLease | undefined): { session_timeout_ms?: number; calls_end_in_ms?: number } {
    if (!lease) return {};
    const left = Math.floor(lease.endsAt - performance.now() - this.endGraceMs);
    return { session_timeout_ms: lease.timeoutMs, ...(left > 0 ? { calls_end_in_ms: left } : {}) };
  }

  /** The session worker `id` serves (or is being assigned), if any. */
  private sessionOf(id: WorkerId): string | undefined {
    return this.machine.workers.find((w) => w.id === id)?.sessionId;
  }

  /**
   * A piece of what a worker printed: its session's (kept for the host), a
   * crash report's last lines, and a bounded, escaped excerpt in the log —
   * never the raw bytes. The watchdog's marker is taken out of stderr first.
   */
  private printed(id: WorkerId, p: WorkerProcess, stream: "stdout" | "stderr", chunk: Buffer): void {
    let text = chunk.toString();
    let bytes: Uint8Array = chunk;
    if (stream === "stderr") {
      const marked = takeTimeoutMarker(text);
      if (marked.timeout !== undefined) {
        p.timedOut ??= marked.timeout;
        text = marked.text;
        bytes = Buffer.from(text);
      }
    }
    p.sessionOutput?.append(bytes);
    p.stderrTail = (p.stderrTail + text).slice(-STDERR_TAIL_BYTES);
    p.unlogged[stream].add(text, bytes.byteLength);
    // A kernel's output comes in pieces (unbuffered: a byte a write): one line for what came within LOG_GATHER_MS.
    p.logTimer ??= setTimeout(() => this.logOutput(id, p), LOG_GATHER_MS).unref();
  }

  /** The worker's output since the last such line, one "worker output" line per stream, within its budget. */
  private logOutput(id: WorkerId, p: WorkerProcess): void {
    clearTimeout(p.logTimer);
    p.logTimer = undefined;
    for (const stream of ["stdout", "stderr"] as const) {
      const excerpt = p.unlogged[stream].take();
      if (!excerpt || !p.logBudget.take(Buffer.byteLength(excerpt.output), excerpt.bytes)) continue;
      const dropped = p.logBudget.dropped();
      this.log.info(
        {
          board: this.boardName,
          session: this.sessionOf(id) ?? null,
          pid: p.child.pid,
          stream,
          output: excerpt.output,
          bytes: excerpt.bytes,
          ...(excerpt.cut ? { cut: excerpt.cut } : {}),
          ...(dropped ? { dropped } : {}),
        },
        "worker output",
      );
    }
  }

  /**
   * Reads what is waiting in a worker's pipes now, before its events would:
   * a worker asks for its output after it printed (the bytes are in the
   * pipe by then), but the two arrive on different descriptors, in no
   * promised order. Bounded: a leftover process of a kernel may print on.
   */
  private drainOutput(id: WorkerId, p: WorkerProcess): void {
    const buf = DRAIN_BUFFER;
    for (const stream of ["stdout", "stderr"] as const) {
      const pipe = p.child[stream] as Readable | null;
      let fd: number;
      try {
        fd = descriptorOf(pipe ?? {});
      } catch {
        continue; // closed: everything it carried was read
      }
      for (let total = 0; total < SESSION_OUTPUT_BYTES;) {
        let n: number;
        try {
          n = readSync(fd, buf, 0, buf.length, null);
        } catch {
          break; // EAGAIN: nothing more waits
        }
        if (n <= 0) break;
        total += n;
        this.printed(id, p, stream, Buffer.from(buf.subarray(0, n)));
      }
    }
  }

  /**
   * A worker's message, fed to the machine. A "lane_opened" with a ticket
   * says the worker took a session by its ticket alone: the agent checks
   * that ticket as the worker should have (signed by this tracker, for this
   * board and this worker) before the machine hears of it.
   */
  private fromWorker(id: WorkerId, msg: WorkerMessage): void {
    if (msg.kind !== "lane_opened" || msg.m.ticket === "") return void this.feed({ kind: "message", worker: id, msg });
    traceGrant("agent: the worker's claim read");
    const sessionId = msg.m.session_id;
    const workerId = this.procs.get(id)?.workerId ?? "";
    let error: FarmError | undefined;
    try {
      if (!this.tickets) throw new FarmError("PERMISSION_DENIED", "this agent has no ticket key from its tracker");
      checkTicket(msg.m.ticket, sessionId, { key: this.tickets.key, boardName: this.boardName, workerId });
    } catch (err) {
      error = FarmError.from(err);
    }
    this.feed({ kind: "claimed", worker: id, sessionId, ...(error ? { error } : {}) });
  }

  /** Made by the agent: the workers' root is closed to them (device-agent/agent/sandbox.ts). One prepared while the worker was idle is taken. */
  private makeSessionFolder(id: WorkerId, sessionId: string): void {
    const p = this.procs.get(id);
    let dir = p?.prepared;
    if (p) p.prepared = undefined;
    try {
      dir ??= this.newFolder(sessionId, p?.uid);
    } catch (err) {
      this.feed({ kind: "folderFailed", worker: id, error: FarmError.from(err) });
      return;
    }
    this.folders.set(sessionId, dir);
    this.feed({ kind: "folderMade", worker: id });
  }

  /**
   * An idle worker's next session's folder, made now, off any grant's path
   * (a tmpfs to mount); the worker hears of it, and a host that comes with
   * its ticket finds everything ready. Not made: the session's folder is
   * made when its assignment comes, as it was.
   */
  private prepareFolder(id: WorkerId): void {
    const p = this.procs.get(id);
    if (!p || p.prepared) return;
    try {
      p.prepared = this.newFolder(`next-${randomBytes(6).toString("hex")}`, p.uid);
    } catch (err) {
      this.log.warn(
        { board: this.boardName, err: (err as Error).message },
        "cannot prepare an idle worker's next session folder: it is made when the session comes",
      );
      return;
    }
    p.channel.send({ prepared: { dir: p.prepared } });
  }

  /** A session's folder named `name` for `uid`, its bounded filesystem mounted before the worker hears of it: every file the session writes counts. */
  private newFolder(name: string, uid: number | undefined): string {
    const dir = this.sandbox.dirs.session(name, uid);
    if (this.sandbox.disk && uid !== undefined) {
      try {
        this.sandbox.disk.mount(dir, uid);
      } catch (err) {
        rmSync(dir, { recursive: true, force: true });
        throw err;
      }
    }
    return dir;
  }

  private handLane(id: WorkerId, sessionId: string, lane: LaneId): void {
    const held = this.lanes.get(lane);
    this.lanes.delete(lane);
    if (!held) return;
    let sent = false;
    try {
      sent = this.procs.get(id)?.channel.send({ lane: { session_id: sessionId, kind: held.kind, rest: held.rest } }, held.socket) ?? false;
    } catch (err) {
      this.log.warn({ board: this.boardName, session: sessionId, err: (err as Error).message }, "cannot hand a lane to its session's worker");
    }
    // The worker has its own copy now: the agent's goes (closing a descriptor, not the connection).
    held.socket.destroy();
    this.lastHanded = { lane, sent };
  }

  /** The folder of the worker's current session, if it has one. */
  private folderOf(id: WorkerId): string | undefined {
    const session = this.machine.workers.find((w) => w.id === id)?.folder;
    return session === undefined ? undefined : this.folders.get(session);
  }

  private takeFolder(sessionId: string | undefined): string | undefined {
    if (sessionId === undefined) return undefined;
    const dir = this.folders.get(sessionId);
    this.folders.delete(sessionId);
    return dir;
  }

  /** What a dead worker leaves: its session's folder, its processes (a kernel's children), its uid, its home. */
  private reap(id: WorkerId, folder: string | undefined): void {
    const p = this.procs.get(id);
    // Its session's folder, and the one prepared for its next (an idle worker's).
    const dirs = [this.takeFolder(folder), this.takePrepared(p)].filter((d) => d !== undefined);
    if (!p) return dirs.forEach((d) => this.removeDir(d));
    // As root, the folder waits until nothing of its uid runs: root's recursive removal could otherwise follow a link
    // a leftover process of the kernel swaps in for a subfolder meanwhile (the agent's sweep of dead agents' folders
    // keeps the same order, leftovers.ts).
    const late = p.uid !== undefined;
    for (const d of dirs) {
      if (late) this.lateRemovals.set(d, p.uid!);
      else this.removeDir(d);
    }
    if (p.uid === undefined) killGroup(p);
    // As root: every process of its uid, whatever group it moved to; then the uid is free again.
    void this.sandbox.uids.release(p.uid).then(() => {
      rmSync(p.home, { recursive: true, force: true });
      // Unless close() removed them meanwhile.
      for (const d of dirs) if (late && this.lateRemovals.delete(d)) this.removeDir(d);
    });
  }

  /** Reaps a worker just killed, now: the agent may be exiting, and a kernel's children have no parent-death signal. */
  private reapNow(id: WorkerId, folder: string | undefined): void {
    const p = this.procs.get(id);
    if (p?.uid !== undefined) this.sandbox.uids.releaseSync(p.uid);
    else if (p) killGroup(p);
    // Now too, once nothing of it runs: the agent removes its scratch folder next, which cannot go while a session's tmpfs is mounted in it.
    this.removeDir(this.takeFolder(folder), true);
    this.removeDir(this.takePrepared(p), true);
  }

  /** The folder prepared for a worker's next session, no longer its. */
  private takePrepared(p: WorkerProcess | undefined): string | undefined {
    const dir = p?.prepared;
    if (p) p.prepared = undefined;
    return dir;
  }

  /**
   * Removes a session's folder. Its tmpfs is detached, not unmounted: a
   * kernel's leftover child may still hold a file open in it; the memory is
   * freed when the last one goes (every process of the uid is killed on
   * reap). Detached off the event loop (unmountSoon), then the folder, empty
   * by then, removed; `now` (the pool closing): all at once.
   */
  private removeDir(dir: string | undefined, now = false): void {
    if (!dir) return;
    this.sandbox.store.release(basename(dir));
    const disk = this.sandbox.disk;
    const failed = (err: unknown) => this.log.error({ board: this.boardName, dir, err: (err as Error).message }, "cannot detach a session's tmpfs");
    const remove = () => rmSync(dir, { recursive: true, force: true });
    if (!disk) return remove();
    if (!now) {
      this.detaching.add(dir);
      return void disk
        .unmountSoon(dir)
        .catch(failed)
        .then(() => this.detaching.delete(dir) && remove())
        .catch((err: unknown) => this.log.error({ board: this.boardName, dir, err: (err as Error).message }, "cannot remove a session's folder"));
    }
    this.detaching.delete(dir);
    try {
      disk.unmount(dir);
    } catch (err) {
      failed(err);
    }
    remove();
  }

  /** A worker's request to the agent, served in its session's folder; resolves to the reply. */
  private serveRequest(id: WorkerId, r: WorkerRequest): Promise<AgentToWorker> {
    const p = this.procs.get(id)!;
    const dir = this.folderOf(id);
    if (r.kind === "output_read") return this.outputRead(id, p, r.m.id, r.m.from);
    if (r.kind === "store_keep") return this.storeKeep(p, dir, r.m.id, r.m.name, r.m.sha256);
    if (r.kind === "store_take") return this.storeTake(p, dir, r.m.id, r.m.sha256, r.m.size);
    return this.programFpga(p, dir, r.m.id, r.m.bitstream, r.m.config);
  }

  /**
   * A worker asks, for its session's host, what it printed since its session
   * began: one piece from `from` on. Answered once the agent's earlier
   * messages have left for the worker, so that one that asks and never reads
   * holds at most one answer in the agent (its requests in flight are bounded).
   */
  private async outputRead(id: WorkerId, p: WorkerProcess, reqId: number, from: number): Promise<AgentToWorker> {
    this.drainOutput(id, p);
    const { start, data, end } = p.sessionOutput?.read(from, OUTPUT_READ_BYTES) ?? { start: 0, data: Buffer.alloc(0), end: 0 };
    await p.channel.drained();
    return { output: { id: reqId, data, start, end } };
  }

  /** A worker asks for a stored file in its session's folder (agent/content-store.ts), under a name the agent picks. */
  private async storeTake(p: WorkerProcess, dir: string | undefined, id: number, sha256: string, size: number): Promise<AgentToWorker> {
    // Starts with ".module": hidden from the session's listing until the worker renames it. Made exclusively
    // (content-store.ts): a link the kernel left under that name is refused, never followed.
    const file = `.module-store-${p.storeSeq++}`;
    const ok = dir !== undefined && (await this.sandbox.store.take(sha256, size, join(dir, file), basename(dir)));
    return { store_took: { id, file: ok ? file : "" } };
  }

  /** A worker asks for its session's file `name` (a plain name, checked by the decoder) to be kept: only a file its uid owns. */
  private async storeKeep(p: WorkerProcess, dir: string | undefined, id: number, name: string, sha256: string): Promise<AgentToWorker> {
    if (dir !== undefined) await this.sandbox.store.keep(join(dir, name), sha256, p.uid);
    return { store_kept: { id } };
  }

  /** A worker's session asks for a bitstream of its folder to be loaded: only plain names in its own folder. */
  private async programFpga(p: WorkerProcess, dir: string | undefined, id: number, bitstream: string, config: string): Promise<AgentToWorker> {
    try {
      if (dir === undefined) throw new FarmError("SESSION_CLOSED", "program_fpga after the session's end");
      const [b, c] = await Promise.all([readSessionFile(dir, bitstream, p.uid), readSessionFile(dir, config, p.uid)]);
      return { fpga_programmed: { id, ...(await this.events.programFpga(this.boardName, b, c)) } };
    } catch (err) {
      return { fpga_programmed: { id, error: FarmError.from(err).toWire() } };
    }
  }

  /**
   * Opens a worker's standby lane: a listening port the agent makes (a worker
   * in a network namespace of its own could not) and hands over; the agent
   * keeps no copy, so every connection there reaches that worker. Resolves to
   * its port; 0 when it has none.
   */
  private async openStandby(id: WorkerId): Promise<number> {
    const server = createServer();
    try {
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(0, this.standbyHost, resolve);
      });
      const port = (server.address() as AddressInfo).port;
      const p = this.procs.get(id);
      if (!p?.channel.send({ standby: { worker_id: p.workerId } }, server)) throw new Error("the worker is gone");
      if (this.tickets) p.channel.send(this.tickets.message);
      return port;
    } catch (err) {
      this.log.warn({ board: this.boardName, err: (err as Error).message }, "no standby lane for a session worker: its hosts use the agent's data port");
      return 0;
    } finally {
      server.close();
    }
  }

  /** How a worker's death reads to its session's host, from what it printed and how it went. */
  private deathReason(id: WorkerId, p: WorkerProcess, code: number | null, signal: NodeJS.Signals | null): FarmError {
    if (p.timedOut !== undefined) return new FarmError("TIMEOUT", `${p.timedOut}; the session worker was killed and the board returned to the pool`);
    if (signal === "SIGXFSZ") {
      // Node ignores SIGXFSZ (a write past the limit fails with EFBIG); a kernel that restored it died of it.
      const limit = effectiveLimits(this.sandbox.plan, this.config.kind).fsize;
      return new FarmError(
        "TOO_LARGE",
        `the session wrote a file larger than the worker's limit of ${limit} bytes (--worker-limits fsize=); the session worker was killed and the board returned to the pool`,
      );
    }
    // Its session's filesystem is full: most likely what it died of (a kernel that did not check a write).
    const dir = this.folderOf(id);
    if (this.sandbox.disk && dir && this.sandbox.disk.full(dir)) {
      const e = quotaError(this.sandbox.disk.quotaBytes);
      return new FarmError(
        "TOO_LARGE",
        `${e.message}; the session worker (pid ${p.child.pid}) ${signal ? `was killed by ${signal}` : `exited with code ${code}`} and the board returned to the pool`,
      );
    }
    const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
    const tail = p.stderrTail.trim().split("\n").slice(-5).join("\n").trim();
    // The signal or exit code in details too: a host can tell a segfault from a kill without parsing the message.
    return new FarmError("RUNTIME_CRASH", `the session worker (pid ${p.child.pid}) ${how}${tail ? `; its last output:\n${tail}` : ""}`, {
      details: signal ? { signal } : { exitCode: code },
    });
  }
}

function timerKey(timer: PoolTimer): string {
  return timer.name === "canary" ? "canary" : `grace:${timer.worker}`;
}

/** Kills a worker's process group: what its kernels forked and left behind (unless they left the group). */
function killGroup(w: WorkerProcess): void {
  try {
    process.kill(-w.child.pid!, "SIGKILL");
  } catch {
    // none left
  }
}
