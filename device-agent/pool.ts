/**
 * Session workers of one board. Keeps `warm` started workers idle so a grant
 * never waits for a process start, hands each assignment to one, and turns a
 * worker's death into a session end with the reason (crash, call timeout).
 *
 * Worker states: `starting` → `idle` → `serving` → (`idle` again when it ran
 * no foreign code | exit); any state → exit.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { rmSync } from "node:fs";
import { basename, join } from "node:path";
import { createServer, type AddressInfo, type Socket } from "node:net";
import { FarmError, SESSION_END_GRACE_MS, type Logger } from "../protos/index.ts";
import type { BoardMetrics } from "./metrics.ts";
import { effectiveLimits, workerCommand, workerEnv, type SandboxPlan, type UidAllocator, type WorkerDirs } from "./sandbox.ts";
import { quotaError, type SessionDisk } from "./session-disk.ts";
import { workerNode, type WorkerEntry } from "./worker-entry.ts";
import type { ContentStore } from "./worker/content-store.ts";
import type { AgentToWorker, WorkerConfig, WorkerToAgent } from "./worker/protocol.ts";
import { TIMEOUT_MARKER } from "./worker/watchdog.ts";

/** How the agent's workers are confined (device-agent/sandbox.ts), shared by its boards' pools. */
export interface WorkerSandbox {
  readonly plan: SandboxPlan;
  readonly uids: UidAllocator;
  readonly dirs: WorkerDirs;
  /** The agent's content store, which workers use through IPC. */
  readonly store: ContentStore;
  /** Each session's folder a tmpfs of the quota (as root with uids of their own; session-disk.ts); absent: plain folders. */
  readonly disk?: SessionDisk;
}

/** How much of a dead worker's stderr goes into the error message. */
const STDERR_TAIL_BYTES = 2048;

type WorkerState = "starting" | "idle" | "serving" | "exiting";
const WORKER_STATES: readonly WorkerState[] = ["starting", "idle", "serving", "exiting"];

interface WorkerHandle {
  readonly child: ChildProcess;
  /** Its own uid (the agent runs as root), held until every process it ran is dead. */
  readonly uid: number | undefined;
  /** Its HOME and TMPDIR, removed when it exits. */
  readonly home: string;
  state: WorkerState;
  sessionId?: string;
  /** The current session's folder. */
  sessionDir?: string;
  /** The end of what the worker printed (stdout and stderr). */
  stderrTail: string;
  /** Set when the agent itself killed it: its exit is not news. */
  expectedExit: boolean;
  graceTimer?: NodeJS.Timeout;
  /** performance.now() at fork, for the start-time histogram. */
  readonly forkedAt: number;
  /** Its current session was counted in the metrics already. */
  counted: boolean;
  /** Its standby lane's port (worker/standby.ts); 0: it has none; undefined: not opened yet. */
  lanePort?: number;
}

/** A canary's result or an infrastructure error, as the tracker hears it (BoardHealthReport). */
export interface HealthReport {
  kind: "canary" | "infra";
  ok: boolean;
  reason: string;
  durationMs: number;
  /** A passing canary: its kernel's time per run (device-agent/backends/canary-timing.ts); 0: not timed. */
  kernelNs: number;
}

export interface PoolEvents {
  /** The board has an idle worker and no session: it may be granted (`standbyPort` names that worker's standby lane). */
  ready(boardName: string): void;
  /** A host reached a session's worker at its standby lane. */
  laneOpened(sessionId: string): void;
  /** A session ended on this side: closed cleanly (null), or the worker died / timed out. */
  sessionEnded(sessionId: string, reason: FarmError | null): void;
  /** A canary ran, or the board's infrastructure failed (a worker died or did not start outside any session). */
  health(boardName: string, report: HealthReport): void;
  /** A session asks to load a bitstream into the board's FPGA (paths of its files); the agent checks, loads and relabels. */
  programFpga(boardName: string, bitstream: string, config: string): Promise<{ sha256: string; hardware: string }>;
}

export class BoardPool {
  private readonly workers = new Set<WorkerHandle>();
  /** A session assigned while no worker was idle, and the lanes that came for it meanwhile. */
  private waiting: { sessionId: string; token: string; route: string; lanes: Array<{ socket: Socket; rest: Buffer; kind: "direct" | "relay" }> } | undefined;
  private closed = false;
  /** Workers started, for names of homes where workers have no uid of their own. */
  private started = 0;

  /** The session end grace (protos/routes.ts), as the tracker said: a cleanly ended session's worker gets this long to report before it is killed. */
  endGraceMs = SESSION_END_GRACE_MS;

  constructor(
    private readonly config: WorkerConfig,
    private readonly entry: WorkerEntry,
    private readonly warm: number,
    private readonly events: PoolEvents,
    private readonly log: Logger,
    private readonly sandbox: WorkerSandbox,
    /** The direct lane's interface, where each worker gets a standby lane of its own; undefined: no standby lanes. */
    private readonly standbyHost: string | undefined,
    private readonly metrics?: BoardMetrics,
  ) {
    metrics?.watchWorkers(() => this.workerStates());
  }

  /** Workers per state, every state present. */
  workerStates(): Record<WorkerState, number> {
    const counts = Object.fromEntries(WORKER_STATES.map((s) => [s, 0])) as Record<WorkerState, number>;
    for (const w of this.workers) counts[w.state]++;
    return counts;
  }

  get boardName(): string {
    return this.config.boardName;
  }

  private count(state: WorkerState): number {
    let n = 0;
    for (const w of this.workers) if (w.state === state) n++;
    return n;
  }

  get hasIdle(): boolean {
    return this.count("idle") > 0;
  }

  /** The standby lane's port of the worker that takes the next session; 0 when it has none. */
  get standbyPort(): number {
    return this.nextIdle()?.lanePort ?? 0;
  }

  /** The idle worker whose standby lane is `lanePort`, else the first idle one. */
  private nextIdle(lanePort = 0): WorkerHandle | undefined {
    let first: WorkerHandle | undefined;
    for (const w of this.workers) {
      if (w.state !== "idle") continue;
      if (lanePort && w.lanePort === lanePort) return w;
      first ??= w;
    }
    return first;
  }

  /** Starts workers until `warm` are idle or starting. */
  fill(): void {
    while (!this.closed && this.count("idle") + this.count("starting") < this.warm) this.spawn();
  }

  private spawn(): void {
    let uid: number | undefined;
    let home: string;
    try {
      uid = this.sandbox.uids.take();
      home = this.sandbox.dirs.home(uid !== undefined ? String(uid) : `${this.boardName}-${this.started++}`, uid);
    } catch (err) {
      this.log.error({ board: this.boardName, err: (err as Error).message }, "cannot start a session worker");
      void this.sandbox.uids.release(uid);
      return;
    }
    const argv = workerCommand(this.sandbox.plan, this.config.kind, uid, [workerNode(), ...this.entry.execArgv, this.entry.script]);
    const child = spawn(argv[0]!, argv.slice(1), {
      // Never the agent's environment (its tokens, its secrets): only what a worker needs.
      env: workerEnv(process.env, { KFARM_WORKER: JSON.stringify(this.config), HOME: home, TMPDIR: home }),
      cwd: home,
      // Kernels' stdout and stderr come through the agent (and into crash reports),
      // so a worker never holds a descriptor of whoever started the agent.
      stdio: ["ignore", "pipe", "pipe", "ipc"],
      serialization: "json",
      // A process group of its own: what a kernel forks is killed with it (as root, every process of its uid is).
      detached: true,
    });
    const w: WorkerHandle = { child, uid, home, state: "starting", stderrTail: "", expectedExit: false, forkedAt: performance.now(), counted: false };
    this.workers.add(w);
    this.metrics?.workerSpawned();
    const output = (chunk: Buffer) => {
      process.stderr.write(chunk);
      w.stderrTail = (w.stderrTail + chunk.toString()).slice(-STDERR_TAIL_BYTES);
    };
    child.stdout!.on("data", output);
    child.stderr!.on("data", output);
    child.on("message", (msg: WorkerToAgent) => this.onMessage(w, msg));
    child.on("exit", (code, signal) => this.onExit(w, code, signal));
    child.on("error", (err) => this.log.error({ board: this.boardName, err: err.message }, "session worker failed to start"));
  }

  private onMessage(w: WorkerHandle, msg: WorkerToAgent): void {
    if (msg.t === "store-take") {
      void this.storeTake(w, msg.id, msg.sha256, msg.size);
    } else if (msg.t === "store-keep") {
      void this.storeKeep(w, msg.id, msg.name, msg.sha256);
    } else if (msg.t === "program-fpga") {
      void this.programFpga(w, msg.id, msg.bitstream, msg.config);
    } else if (msg.t === "counters") {
      this.metrics?.counted(msg);
    } else if (msg.t === "canary") {
      this.events.health(this.boardName, { kind: "canary", ok: msg.ok, reason: msg.detail, durationMs: msg.durationMs, kernelNs: msg.kernelNs ?? 0 });
    } else if (msg.t === "tainted") {
      // This worker will not come back: boot its successor while the session runs.
      this.fill();
    } else if (msg.t === "ready") {
      this.metrics?.workerReady((performance.now() - w.forkedAt) / 1e3);
      // Its standby lane first: the readiness the tracker hears names it.
      if (this.standbyHost !== undefined && w.lanePort === undefined) void this.openStandby(w, this.standbyHost).then(() => this.becameIdle(w));
      else this.becameIdle(w);
    } else if (msg.t === "lane-opened") {
      this.events.laneOpened(msg.sessionId);
    } else if (msg.t === "ended") {
      clearTimeout(w.graceTimer);
      this.tally(w, msg.error?.code ?? "OK");
      // The tracker waits for this to tell a clean close from a dead worker.
      this.events.sessionEnded(msg.sessionId, msg.error ? FarmError.fromWire(msg.error) : null);
      w.sessionId = undefined;
      // The folder goes after the board's readiness is on its way: its removal (a tmpfs to detach) is off the next grant's path.
      const dir = w.sessionDir;
      w.sessionDir = undefined;
      this.afterEnded(w, msg.reusable);
      this.removeDir(dir);
    }
  }

  /** A worker reported its session's end: it serves again, or goes. */
  private afterEnded(w: WorkerHandle, reusable: boolean): void {
    // Already being killed (the tracker ended the session first): it stays dead.
    if (w.state === "exiting") return;
    if (reusable && this.count("idle") < this.warm && !this.closed) {
      w.state = "idle";
      if (this.serveWaiting()) return;
    } else {
      w.state = "exiting";
      w.expectedExit = true;
      // A tainted worker exits by itself; an extra clean one is told to go.
      if (reusable) w.child.kill("SIGTERM");
    }
    this.fill();
    if (this.hasIdle) this.events.ready(this.boardName);
  }

  private becameIdle(w: WorkerHandle): void {
    if (w.state !== "starting") return; // died meanwhile
    w.state = "idle";
    if (this.serveWaiting()) return;
    if (!this.serving()) this.events.ready(this.boardName);
  }

  /**
   * Opens a worker's standby lane: a listening port the agent makes (a worker
   * in a network namespace of its own could not) and hands over; the agent
   * keeps no copy, so every connection there reaches that worker.
   */
  private async openStandby(w: WorkerHandle, host: string): Promise<void> {
    const server = createServer();
    try {
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(0, host, resolve);
      });
      const port = (server.address() as AddressInfo).port;
      await new Promise<void>((resolve, reject) => w.child.send({ t: "standby" } satisfies AgentToWorker, server, (err) => (err ? reject(err) : resolve())));
      w.lanePort = port;
    } catch (err) {
      w.lanePort = 0;
      this.log.warn({ board: this.boardName, err: (err as Error).message }, "no standby lane for a session worker: its hosts use the agent's data port");
    } finally {
      server.close();
    }
  }

  private onExit(w: WorkerHandle, code: number | null, signal: NodeJS.Signals | null): void {
    this.workers.delete(w);
    clearTimeout(w.graceTimer);
    // Looked at before the session's tmpfs goes: a full one tells why the worker died.
    const reason = w.state === "serving" && w.sessionId && !w.expectedExit ? this.deathReason(w, code, signal) : undefined;
    this.removeSessionDir(w);
    this.reap(w);
    if (reason && w.sessionId) {
      this.tally(w, reason.code);
      this.events.sessionEnded(w.sessionId, reason);
    } else if (!w.expectedExit && !this.closed) {
      const how = signal ? `killed by ${signal}` : `exited with code ${code}`;
      this.log.warn({ board: this.boardName, code, signal, stderr: w.stderrTail.slice(-500) }, `idle session worker ${w.child.pid} died`);
      // No kernel of anybody's ran in it: the board's infrastructure is at fault.
      this.events.health(this.boardName, { kind: "infra", ok: false, reason: `${w.state} session worker ${w.child.pid} ${how}`, durationMs: 0, kernelNs: 0 });
    }
    this.fill();
    if (this.hasIdle && !this.serving()) this.events.ready(this.boardName);
  }

  /** What a dead worker leaves: its processes (a kernel's children), its uid, its home. */
  private reap(w: WorkerHandle): void {
    if (w.uid === undefined) killGroup(w);
    // As root: every process of its uid, whatever group it moved to; then the uid is free again.
    void this.sandbox.uids.release(w.uid).then(() => rmSync(w.home, { recursive: true, force: true }));
  }

  private removeSessionDir(w: WorkerHandle): void {
    const dir = w.sessionDir;
    w.sessionDir = undefined;
    this.removeDir(dir);
  }

  private removeDir(dir: string | undefined): void {
    if (!dir) return;
    this.sandbox.store.release(basename(dir));
    if (this.sandbox.disk) {
      try {
        // Detached, not unmounted: a kernel's leftover child may still hold a file open in it; the
        // memory is freed when the last one goes (every process of the uid is killed on reap).
        this.sandbox.disk.unmount(dir);
      } catch (err) {
        this.log.error({ board: this.boardName, dir, err: (err as Error).message }, "cannot detach a session's tmpfs");
      }
    }
    rmSync(dir, { recursive: true, force: true });
  }

  /** A worker asks for a stored file in its session's folder (worker/content-store.ts). */
  private async storeTake(w: WorkerHandle, id: number, sha256: string, size: number): Promise<void> {
    const dir = w.sessionDir;
    const file = `.module-store-${id}`;
    // Starts with ".module": hidden from the session's listing until the worker renames it.
    const ok = dir !== undefined && (await this.sandbox.store.take(sha256, size, join(dir, file), basename(dir)));
    if (w.child.connected) w.child.send({ t: "store-took", id, ...(ok ? { file } : {}) } satisfies AgentToWorker);
  }

  /** A worker asks for its session's file `name` to be kept: only a plain name in its own folder, and only a file its uid owns. */
  private async storeKeep(w: WorkerHandle, id: number, name: string, sha256: string): Promise<void> {
    const dir = w.sessionDir;
    if (dir !== undefined && /^[^/\0]+$/.test(name) && name !== "." && name !== "..") await this.sandbox.store.keep(join(dir, name), sha256, w.uid);
    if (w.child.connected) w.child.send({ t: "store-kept", id } satisfies AgentToWorker);
  }

  /** A worker's session asks for a bitstream of its folder to be loaded: only plain names in its own folder. */
  private async programFpga(w: WorkerHandle, id: number, bitstream: string, config: string): Promise<void> {
    let reply: AgentToWorker;
    try {
      const dir = w.sessionDir;
      const plain = (name: string) => /^[^/\0]+$/.test(name) && name !== "." && name !== "..";
      if (dir === undefined || !plain(bitstream) || !plain(config)) throw new FarmError("BAD_ARGUMENTS", "program_fpga names files of the session's own folder");
      reply = { t: "fpga-programmed", id, ...(await this.events.programFpga(this.boardName, join(dir, bitstream), join(dir, config))) };
    } catch (err) {
      reply = { t: "fpga-programmed", id, error: FarmError.from(err).toWire() };
    }
    if (w.child.connected) w.child.send(reply);
  }

  private deathReason(w: WorkerHandle, code: number | null, signal: NodeJS.Signals | null): FarmError {
    const marker = w.stderrTail.lastIndexOf(TIMEOUT_MARKER);
    if (marker >= 0) {
      const line = w.stderrTail.slice(marker + TIMEOUT_MARKER.length).split("\n")[0]!.trim();
      return new FarmError("TIMEOUT", `${line}; the session worker was killed and the board returned to the pool`);
    }
    if (signal === "SIGXFSZ") {
      // Node ignores SIGXFSZ (a write past the limit fails with EFBIG); a kernel that restored it died of it.
      const limit = effectiveLimits(this.sandbox.plan, this.config.kind).fsize;
      return new FarmError("TOO_LARGE", `the session wrote a file larger than the worker's limit of ${limit} bytes (--worker-limits fsize=); the session worker was killed and the board returned to the pool`);
    }
    // Its session's filesystem is full: most likely what it died of (a kernel that did not check a write).
    if (this.sandbox.disk && w.sessionDir && this.sandbox.disk.full(w.sessionDir)) {
      const e = quotaError(this.sandbox.disk.quotaBytes);
      return new FarmError("TOO_LARGE", `${e.message}; the session worker (pid ${w.child.pid}) ${signal ? `was killed by ${signal}` : `exited with code ${code}`} and the board returned to the pool`);
    }
    const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
    const tail = w.stderrTail.trim().split("\n").slice(-5).join("\n").trim();
    // The signal or exit code in details too: a host can tell a segfault from a kill without parsing the message.
    return new FarmError("RUNTIME_CRASH", `the session worker (pid ${w.child.pid}) ${how}${tail ? `; its last output:\n${tail}` : ""}`, {
      details: signal ? { signal } : { exitCode: code },
    });
  }

  private serving(): WorkerHandle | undefined {
    for (const w of this.workers) if (w.state === "serving") return w;
    return undefined;
  }

  /** `lanePort`: the standby lane the grant named; its worker takes the session if it is idle. */
  assign(sessionId: string, token: string, route: string, lanePort = 0): void {
    const w = this.nextIdle(lanePort);
    if (!w) {
      if (this.closed) {
        this.metrics?.sessionEnded("INTERNAL");
        this.events.sessionEnded(sessionId, new FarmError("INTERNAL", `board ${this.boardName} is shutting down; session ${sessionId} was not served`));
        return;
      }
      // The readiness the tracker granted on was sent just before this board's last worker went (a tainted one's
      // exit, seen before the grant arrived): the session takes the next worker that is ready, one being started
      // now if none is. The tracker's open timeout bounds the wait.
      this.waiting = { sessionId, token, route, lanes: [] };
      this.fill();
      this.log.info({ board: this.boardName, session: sessionId }, "a session waits for a worker to be ready");
      return;
    }
    let dir: string;
    try {
      // Made by the agent: the workers' root is closed to them (device-agent/sandbox.ts).
      dir = this.sandbox.dirs.session(sessionId, w.uid);
      // Its bounded filesystem, before the worker hears of it: every file the session writes counts.
      if (this.sandbox.disk && w.uid !== undefined) {
        try {
          this.sandbox.disk.mount(dir, w.uid);
        } catch (err) {
          rmSync(dir, { recursive: true, force: true });
          throw err;
        }
      }
    } catch (err) {
      this.metrics?.sessionEnded("INTERNAL");
      this.events.sessionEnded(sessionId, FarmError.from(err));
      return;
    }
    w.state = "serving";
    w.sessionId = sessionId;
    w.sessionDir = dir;
    w.counted = false;
    // No spare is forked here: a clean session gives this worker back, and a
    // tainted one announces itself ("tainted") so its successor boots early.
    w.child.send({ t: "assign", sessionId, token, dir, route } satisfies AgentToWorker, (err) => {
      if (!err || w.state !== "serving") return;
      this.tally(w, "RUNTIME_CRASH");
      this.kill(w);
      this.events.sessionEnded(sessionId, new FarmError("RUNTIME_CRASH", `the session worker (pid ${w.child.pid}) went away before it took the session: ${err.message}`));
    });
    if (this.hasIdle) this.events.ready(this.boardName);
  }

  /** Gives the worker serving `sessionId` its lane (or keeps it for the worker it waits for); false when none does. */
  giveLane(sessionId: string, socket: Socket, rest: Buffer, kind: "direct" | "relay"): boolean {
    if (this.waiting?.sessionId === sessionId) {
      this.waiting.lanes.push({ socket, rest, kind });
      return true;
    }
    const w = this.servingOf(sessionId);
    if (!w || !w.child.connected) return false;
    w.child.send({ t: "lane", sessionId, kind, rest: rest.toString("base64") } satisfies AgentToWorker, socket, (err) => {
      if (err) socket.destroy();
    });
    return true;
  }

  /** A worker became idle: a waiting session takes it. True when one did. */
  private serveWaiting(): boolean {
    const a = this.waiting;
    if (!a) return false;
    this.waiting = undefined;
    this.assign(a.sessionId, a.token, a.route);
    for (const lane of a.lanes) if (!this.giveLane(a.sessionId, lane.socket, lane.rest, lane.kind)) lane.socket.destroy();
    return true;
  }

  private servingOf(sessionId: string): WorkerHandle | undefined {
    for (const w of this.workers) if (w.sessionId === sessionId && w.state === "serving") return w;
    return undefined;
  }

  /** The tracker ended a session: a clean end lets the worker close its lane and report, any other kills it. */
  end(sessionId: string, reason: FarmError | null): void {
    if (this.waiting?.sessionId === sessionId) {
      for (const lane of this.waiting.lanes) lane.socket.destroy();
      this.waiting = undefined;
      return;
    }
    const w = this.servingOf(sessionId);
    if (!w) return;
    if (reason) {
      this.tally(w, reason.code);
      this.kill(w);
      return;
    }
    if (w.child.connected) w.child.send({ t: "end", sessionId } satisfies AgentToWorker);
    w.graceTimer = setTimeout(() => {
      this.tally(w, "OK");
      this.kill(w);
    }, this.endGraceMs);
  }

  /** Counts the end of `w`'s current session in the metrics, once. */
  private tally(w: WorkerHandle, reason: string): void {
    if (w.counted) return;
    w.counted = true;
    this.metrics?.sessionEnded(reason);
  }

  private kill(w: WorkerHandle): void {
    w.expectedExit = true;
    w.state = "exiting";
    w.child.kill("SIGKILL");
  }

  /** Kills every worker (sessions included) and whatever its kernels started. */
  close(): void {
    this.closed = true;
    for (const w of this.workers) {
      this.kill(w);
      // Now too: the agent removes its scratch folder next, which cannot go while a session's tmpfs is mounted in it.
      this.removeSessionDir(w);
      // Now, not at the exit event: the agent may be exiting, and a kernel's children have no parent-death signal.
      if (w.uid !== undefined) this.sandbox.uids.releaseSync(w.uid);
      else killGroup(w);
    }
  }

  /** Ends every session in progress (the tracker is gone, its sessions with it). */
  abandonSessions(): void {
    for (const w of this.workers) {
      if (w.state !== "serving") continue;
      this.tally(w, "AGENT_LOST");
      this.kill(w);
    }
  }
}

/** Kills a worker's process group: what its kernels forked and left behind (unless they left the group). */
function killGroup(w: WorkerHandle): void {
  try {
    process.kill(-w.child.pid!, "SIGKILL");
  } catch {
    // none left
  }
}
