/**
 * Session workers of one board. Keeps `warm` started workers idle so a grant
 * never waits for a process start, hands each assignment to one, and turns a
 * worker's death into a session end with the reason (crash, call timeout).
 *
 * Worker states: `starting` → `idle` → `serving` → (`idle` again when it ran
 * no native code | exit); any state → exit.
 *
 * A worker runs tenants' code, so the pool believes nothing it says beyond
 * what concerns its own session (worker-channel.ts carries and decodes;
 * `judge` below checks each message against the worker's state):
 *
 * | message       | accepted from                                   | the agent then                         |
 * |---------------|-------------------------------------------------|----------------------------------------|
 * | ready         | a starting worker, once                         | lets it serve                          |
 * | canary        | a worker that never loaded native code, asked to run one (at start, or `run_canary` while idle) | reports the board's health |
 * | foreign_code  | the serving worker, for its session             | never gives that process another session |
 * | counters      | the serving worker                              | counts (bounded, known codes only)     |
 * | lane_opened   | the serving worker, for its session             | tells the tracker                      |
 * | store_keep / store_take / program_fpga | the serving worker, a few at a time | acts in its session's folder only, on names it chose or checked |
 * | ended         | the serving worker, for its session             | reuses it only if it never loaded native code and offers to serve again |
 *
 * Anything else — bytes that do not decode, a message out of its state or
 * naming another session — kills that worker's processes and ends only its
 * own session: PROTOCOL_ERROR, logged with the worker's pid and uid.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { rmSync } from "node:fs";
import { basename, join } from "node:path";
import { createServer, type AddressInfo, type Socket } from "node:net";
import { FarmError, SESSION_END_GRACE_MS, WORKER_MAX_PENDING_REQUESTS, workerProtocolError, type AgentToWorker, type Route, type WorkerMessage } from "../../protos/index.ts";
import { type Logger } from "../../runtime/index.ts";
import type { BoardMetrics } from "./metrics.ts";
import { effectiveLimits, workerCommand, workerEnv, type SandboxPlan, type UidAllocator, type WorkerDirs } from "./sandbox.ts";
import { quotaError, type SessionDisk } from "../common/session-disk.ts";
import { readSessionFile, type SessionFile } from "../common/session-file.ts";
import { workerNode, type WorkerEntry } from "./worker-entry.ts";
import type { ContentStore } from "./content-store.ts";
import type { WorkerConfig } from "../common/worker-spawn.ts";
import { TIMEOUT_MARKER } from "../common/worker-spawn.ts";
import { WORKER_STDIO, WorkerChannel } from "./worker-channel.ts";

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
/** What a worker may print through the agent's stderr: a burst, then a rate (OutputBudget). */
const OUTPUT_BURST_BYTES = 1 << 20;
const OUTPUT_BYTES_PER_S = 64 << 10;
/** After a worker's exit, how long its last messages may take to arrive (a kernel's leftover child can hold the channel open). */
const CHANNEL_DRAIN_MS = 250;

type WorkerState = "starting" | "idle" | "serving" | "exiting";
const WORKER_STATES: readonly WorkerState[] = ["starting", "idle", "serving", "exiting"];

interface WorkerHandle {
  readonly child: ChildProcess;
  readonly channel: WorkerChannel;
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
  /** A session of it said it loads native code: nothing it says is believed beyond that session, and it serves no other. */
  nativeCode: boolean;
  /** It was asked to run the canary (at start, or run_canary) and has not answered. */
  canaryAsked: boolean;
  /** Store and FPGA requests in flight. */
  pending: number;
  /** Names of stored files handed to its sessions (agent-chosen, never the worker's). */
  storeSeq: number;
  /** Its current session's lane was reported open to the tracker. */
  laneOpened: boolean;
  /** How much of what it prints the agent still forwards to its own stderr. */
  readonly output: OutputBudget;
}

/**
 * What a worker may print through the agent: a kernel that floods stdout must
 * not flood the agent's log, nor block its event loop (stderr to a pipe is a
 * synchronous write on Linux). A bucket of OUTPUT_BURST_BYTES refilled at
 * OUTPUT_BYTES_PER_S; what does not fit is dropped, said once per flood.
 */
class OutputBudget {
  private bytes = OUTPUT_BURST_BYTES;
  private at = performance.now();
  private dropped = 0;

  constructor(private readonly onDrop: (dropped: number) => void) {}

  take(n: number): boolean {
    const now = performance.now();
    this.bytes = Math.min(OUTPUT_BURST_BYTES, this.bytes + ((now - this.at) / 1000) * OUTPUT_BYTES_PER_S);
    this.at = now;
    if (n <= this.bytes) {
      this.bytes -= n;
      this.dropped = 0;
      return true;
    }
    if (this.dropped === 0) this.onDrop(n);
    this.dropped += n;
    return false;
  }
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
  programFpga(boardName: string, bitstream: SessionFile, config: SessionFile): Promise<{ sha256: string; hardware: string }>;
}

export class BoardPool {
  private readonly workers = new Set<WorkerHandle>();
  /** A session assigned while no worker was idle, and the lanes that came for it meanwhile. */
  private waiting: { sessionId: string; token: string; route: Route; lanes: Array<{ socket: Socket; rest: Buffer; kind: "direct" | "relay" }> } | undefined;
  private closed = false;
  /** Workers started, for names of homes where workers have no uid of their own. */
  private started = 0;
  private canaryTimer: NodeJS.Timeout | undefined;
  /** Session folders of exited workers waiting for their uid's last processes to die (reap()), with that uid. */
  private readonly lateRemovals = new Map<string, number>();

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
    if (config.canaryIntervalMs > 0) this.canaryTimer = setInterval(() => this.askCanary(), config.canaryIntervalMs).unref();
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
      // fds 3-5: its channel to the agent (worker-channel.ts), never Node's IPC channel.
      stdio: WORKER_STDIO,
      // A process group of its own: what a kernel forks is killed with it (as root, every process of its uid is).
      detached: true,
    });
    const channel = new WorkerChannel(child, {
      message: (msg) => this.judge(w, msg),
      broken: (err) => this.breach(w, err),
    });
    // A new worker runs its board's canary before it says ready.
    const w: WorkerHandle = {
      child, channel, uid, home, state: "starting", stderrTail: "", expectedExit: false, forkedAt: performance.now(), counted: false,
      nativeCode: false, canaryAsked: true, pending: 0, storeSeq: 0, laneOpened: false,
      output: new OutputBudget((dropped) => this.log.warn({ board: this.boardName, pid: child.pid, dropped }, "a session worker prints faster than the agent forwards: its output is dropped (its last lines still go into a crash report)")),
    };
    this.workers.add(w);
    this.metrics?.workerSpawned();
    const output = (chunk: Buffer) => {
      if (w.output.take(chunk.length)) process.stderr.write(chunk);
      w.stderrTail = (w.stderrTail + chunk.toString()).slice(-STDERR_TAIL_BYTES);
    };
    child.stdout!.on("data", output);
    child.stderr!.on("data", output);
    child.on("exit", (code, signal) => {
      // Its last messages (an "ended" just before a tainted worker's exit) may still be in the channel.
      let timer: NodeJS.Timeout | undefined;
      const drained = new Promise<void>((resolve) => (timer = setTimeout(resolve, CHANNEL_DRAIN_MS)));
      void Promise.race([channel.ended, drained]).then(() => {
        clearTimeout(timer);
        channel.stop();
        this.onExit(w, code, signal);
      });
    });
    child.on("error", (err) => this.log.error({ board: this.boardName, err: err.message }, "session worker failed to start"));
  }

  /** A well-formed message from `w`: acted on if it is in scope for the worker's state, else a breach. */
  private judge(w: WorkerHandle, msg: WorkerMessage): void {
    if (w.state === "exiting") return; // being killed: nothing it says matters
    const serving = w.state === "serving";
    const ownSession = (id: string) => serving && id === w.sessionId;
    const out = (why: string) => this.breach(w, workerProtocolError(why));
    switch (msg.kind) {
      case "ready":
        if (w.state !== "starting") return out(`"ready" from a ${w.state} worker`);
        w.canaryAsked = false;
        this.metrics?.workerReady((performance.now() - w.forkedAt) / 1e3);
        // Its standby lane first: the readiness the tracker hears names it.
        if (this.standbyHost !== undefined && w.lanePort === undefined) void this.openStandby(w, this.standbyHost).then(() => this.becameIdle(w));
        else this.becameIdle(w);
        return;
      case "canary": {
        // Only from a process no tenant's code ever ran in, and only the verdict it was asked for.
        if (w.nativeCode) return out("a canary verdict from a worker that loaded a tenant's native code");
        if (!w.canaryAsked) return out("a canary verdict nobody asked for");
        w.canaryAsked = false;
        const c = msg.m;
        if (c.ran) this.events.health(this.boardName, { kind: "canary", ok: c.ok, reason: c.detail, durationMs: c.duration_ms, kernelNs: c.kernel_ns });
        return;
      }
      case "foreign_code":
        if (!ownSession(msg.m.session_id)) return out(`foreign_code for session ${msg.m.session_id}, which it does not serve`);
        w.nativeCode = true;
        // This worker will not come back: boot its successor while the session runs.
        this.fill();
        return;
      case "counters":
        if (!serving) return out(`counters from a ${w.state} worker`);
        this.metrics?.counted({ calls: msg.m.calls, timeEvaluations: msg.m.time_evaluations, errors: msg.m.errors });
        return;
      case "lane_opened":
        if (!ownSession(msg.m.session_id)) return out(`lane_opened for session ${msg.m.session_id}, which it does not serve`);
        // Once a session: the tracker hears of a lane once, however often a worker says it.
        if (w.laneOpened) return;
        w.laneOpened = true;
        this.events.laneOpened(msg.m.session_id);
        return;
      case "store_keep":
      case "store_take":
      case "program_fpga": {
        if (!serving) return out(`${msg.kind} from a ${w.state} worker`);
        if (msg.kind === "program_fpga" && this.config.kind !== "vta") return out(`program_fpga on a ${this.config.kind} board`);
        if (w.pending >= WORKER_MAX_PENDING_REQUESTS) return out(`more than ${WORKER_MAX_PENDING_REQUESTS} requests to the agent at once`);
        w.pending++;
        const done = () => void w.pending--;
        if (msg.kind === "store_keep") void this.storeKeep(w, msg.m.id, msg.m.name, msg.m.sha256).finally(done);
        else if (msg.kind === "store_take") void this.storeTake(w, msg.m.id, msg.m.sha256, msg.m.size).finally(done);
        else void this.programFpga(w, msg.m.id, msg.m.bitstream, msg.m.config).finally(done);
        return;
      }
      case "ended": {
        if (!ownSession(msg.m.session_id)) return out(`ended for session ${msg.m.session_id}, which it does not serve`);
        clearTimeout(w.graceTimer);
        const error = msg.m.error ? FarmError.fromWire(msg.m.error) : null;
        this.tally(w, error?.code ?? "OK");
        // The tracker waits for this to tell a clean close from a dead worker.
        this.events.sessionEnded(msg.m.session_id, error);
        w.sessionId = undefined;
        // The folder goes after the board's readiness is on its way: its removal (a tmpfs to detach) is off the next grant's path.
        const dir = w.sessionDir;
        w.sessionDir = undefined;
        // Its offer to serve again is believed only of a process no tenant's native code ran in.
        this.afterEnded(w, msg.m.reusable && !w.nativeCode);
        // A folder its kernel may still be changing (it is being killed) waits for its exit, where that matters (reap()).
        if ((w.state as WorkerState) === "exiting" && this.removalWaitsForUid(w)) w.sessionDir = dir;
        else this.removeDir(dir);
        return;
      }
    }
  }

  /**
   * `w` broke the channel's contract: its processes are killed and only its
   * own session ends, with the reason; the agent and the board's other
   * workers serve on.
   */
  private breach(w: WorkerHandle, err: FarmError): void {
    if (w.state === "exiting") return;
    w.channel.stop();
    this.log.warn(
      { board: this.boardName, session: w.sessionId ?? null, pid: w.child.pid, uid: w.uid ?? null, state: w.state, audit: "worker_protocol", err: err.message },
      "a session worker broke the agent's protocol: killed",
    );
    const sessionId = w.state === "serving" ? w.sessionId : undefined;
    if (sessionId) this.tally(w, err.code);
    this.kill(w);
    // What its kernel forked, now (every process of its uid goes when its exit is reaped).
    killGroup(w);
    if (sessionId) this.events.sessionEnded(sessionId, err);
  }

  /**
   * The board's periodic canary: run by one idle worker that never loaded a
   * tenant's code, when the agent asks (never on a worker's own schedule,
   * so a verdict nobody asked for is a breach).
   */
  private askCanary(): void {
    for (const w of this.workers) {
      if (w.state !== "idle" || w.nativeCode || w.canaryAsked) continue;
      w.canaryAsked = w.channel.send({ run_canary: {} });
      return;
    }
  }

  /** A worker reported its session's end: it serves again, or goes. */
  private afterEnded(w: WorkerHandle, reusable: boolean): void {
    // Already being killed (the tracker ended the session first): it stays dead.
    if (w.state === "exiting") return;
    if (reusable && this.count("idle") < this.warm && !this.closed) {
      w.state = "idle";
      if (this.serveWaiting()) return;
    } else if (reusable) {
      // An extra clean one is told to go.
      w.state = "exiting";
      w.expectedExit = true;
      w.child.kill("SIGTERM");
    } else {
      // Not waited for to exit by itself: it may be its tenant's now.
      this.kill(w);
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
      if (!w.channel.send({ standby: {} }, server)) throw new Error("the worker is gone");
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

  /** What a dead worker leaves: its session's folder, its processes (a kernel's children), its uid, its home. */
  private reap(w: WorkerHandle): void {
    const dir = w.sessionDir;
    w.sessionDir = undefined;
    const late = dir !== undefined && this.removalWaitsForUid(w);
    if (late) this.lateRemovals.set(dir, w.uid!);
    else this.removeDir(dir);
    if (w.uid === undefined) killGroup(w);
    // As root: every process of its uid, whatever group it moved to; then the uid is free again.
    void this.sandbox.uids.release(w.uid).then(() => {
      rmSync(w.home, { recursive: true, force: true });
      // Unless close() removed it meanwhile.
      if (late && this.lateRemovals.delete(dir)) this.removeDir(dir);
    });
  }

  /**
   * Whether the folder of `w`, once killed, waits until nothing of its uid
   * runs: root's recursive removal could otherwise follow a link a leftover
   * process of the kernel swaps in for a subfolder meanwhile (the agent's
   * sweep of dead agents' folders keeps the same order, leftovers.ts).
   */
  private removalWaitsForUid(w: WorkerHandle): boolean {
    return w.uid !== undefined;
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

  /** A worker asks for a stored file in its session's folder (agent/content-store.ts), under a name the agent picks. */
  private async storeTake(w: WorkerHandle, id: number, sha256: string, size: number): Promise<void> {
    const dir = w.sessionDir;
    // Starts with ".module": hidden from the session's listing until the worker renames it. Made exclusively
    // (content-store.ts): a link the kernel left under that name is refused, never followed.
    const file = `.module-store-${w.storeSeq++}`;
    const ok = dir !== undefined && (await this.sandbox.store.take(sha256, size, join(dir, file), basename(dir)));
    this.reply(w, { store_took: { id, file: ok ? file : "" } });
  }

  /** A worker asks for its session's file `name` (a plain name, checked by the decoder) to be kept: only a file its uid owns. */
  private async storeKeep(w: WorkerHandle, id: number, name: string, sha256: string): Promise<void> {
    const dir = w.sessionDir;
    if (dir !== undefined) await this.sandbox.store.keep(join(dir, name), sha256, w.uid);
    this.reply(w, { store_kept: { id } });
  }

  /** Answers a worker's request, unless it went meanwhile. */
  private reply(w: WorkerHandle, msg: AgentToWorker): void {
    if (w.state === "serving") w.channel.send(msg);
  }

  /** A worker's session asks for a bitstream of its folder to be loaded: only plain names in its own folder. */
  private async programFpga(w: WorkerHandle, id: number, bitstream: string, config: string): Promise<void> {
    let reply: AgentToWorker;
    try {
      const dir = w.sessionDir;
      if (dir === undefined) throw new FarmError("SESSION_CLOSED", "program_fpga after the session's end");
      const [b, c] = await Promise.all([readSessionFile(dir, bitstream, w.uid), readSessionFile(dir, config, w.uid)]);
      reply = { fpga_programmed: { id, ...(await this.events.programFpga(this.boardName, b, c)) } };
    } catch (err) {
      reply = { fpga_programmed: { id, error: FarmError.from(err).toWire() } };
    }
    this.reply(w, reply);
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
  assign(sessionId: string, token: string, route: Route, lanePort = 0): void {
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
      // Made by the agent: the workers' root is closed to them (device-agent/agent/sandbox.ts).
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
    w.laneOpened = false;
    // No spare is forked here: a clean session gives this worker back, and a
    // tainted one announces itself ("tainted") so its successor boots early.
    if (!w.channel.send({ assign: { session_id: sessionId, token, dir, route } })) {
      this.tally(w, "RUNTIME_CRASH");
      this.kill(w);
      this.events.sessionEnded(sessionId, new FarmError("RUNTIME_CRASH", `the session worker (pid ${w.child.pid}) went away before it took the session`));
      return;
    }
    if (this.hasIdle) this.events.ready(this.boardName);
  }

  /** Gives the worker serving `sessionId` its lane (or keeps it for the worker it waits for); false when none does. */
  giveLane(sessionId: string, socket: Socket, rest: Buffer, kind: "direct" | "relay"): boolean {
    if (this.waiting?.sessionId === sessionId) {
      this.waiting.lanes.push({ socket, rest, kind });
      return true;
    }
    const w = this.servingOf(sessionId);
    if (!w) return false;
    let sent = false;
    try {
      sent = w.channel.send({ lane: { session_id: sessionId, kind, rest } }, socket);
    } catch (err) {
      this.log.warn({ board: this.boardName, session: sessionId, err: (err as Error).message }, "cannot hand a lane to its session's worker");
    }
    // The worker has its own copy now: the agent's goes (closing a descriptor, not the connection).
    socket.destroy();
    return sent;
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
    w.channel.send({ end: { session_id: sessionId } });
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
    clearInterval(this.canaryTimer);
    for (const w of this.workers) {
      this.kill(w);
      // Now, not at the exit event: the agent may be exiting, and a kernel's children have no parent-death signal.
      if (w.uid !== undefined) this.sandbox.uids.releaseSync(w.uid);
      else killGroup(w);
      // Now too, once nothing of it runs: the agent removes its scratch folder next, which cannot go while a session's tmpfs is mounted in it.
      this.removeSessionDir(w);
    }
    // The same for folders of workers that exited and whose uid is still being cleared.
    for (const [dir, uid] of this.lateRemovals) {
      this.sandbox.uids.releaseSync(uid);
      this.removeDir(dir);
    }
    this.lateRemovals.clear();
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
