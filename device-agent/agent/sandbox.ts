/**
 * How session workers are started so that a kernel cannot harm its agent or
 * another session (docs/sandbox.md). Decided once at agent start from what
 * the OS allows (`resolveSandbox`), then used for every worker:
 *
 * * **its own user** — as root, each live worker runs as a uid of its own from
 *   `workerUids` (`setpriv --reuid U --regid U --groups G --no-new-privs`): its
 *   session directory (0700, owned by U) is unreadable to every other worker,
 *   the agent's /proc entries are unreadable to it, and RLIMIT_NPROC (counted
 *   per uid) bounds this worker alone. The range's first id G is the workers'
 *   group, which every worker has: nothing of the agent's is open to it. Not
 *   root: workers run as the agent's user.
 * * **no network** — a fresh network namespace (`unshare --net`; not root:
 *   `unshare --user --map-root-user --net` where user namespaces work): only a
 *   loopback that is down. A worker needs none: its session's lane comes as a
 *   socket on its channel, whatever the route (lanes.ts).
 * * **resource limits** — `prlimit`: open files, processes, file size,
 *   address space (0: not set).
 * * **a clean environment** — only the variables in `WORKER_ENV` (never the
 *   agent's tokens or secrets), HOME and TMPDIR its own folder (and, while it
 *   serves a session, the session's folder).
 * * **a disk quota** — as root with uids of their own, each session's folder
 *   is a tmpfs of `diskBytes` (session-disk.ts), mounted by the agent.
 *
 * Every wrapper execs the next (none forks), so the worker keeps the agent as
 * its parent (worker/parent-death.ts) and inherits its channel to the agent (fds 3-5, worker-channel.ts).
 */
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  accessSync,
  chmodSync,
  chownSync,
  constants,
  copyFileSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { FarmError } from "../../protos/index.ts";
import { isRunning, type Identity } from "./agent-identity.ts";
import { parseBytes } from "./board-config.ts";
import { SessionDisk } from "../common/session-disk.ts";

/** Resource limits of one worker process; 0 leaves a limit as the agent has it. */
export interface WorkerLimits {
  /** RLIMIT_NOFILE: open descriptors. */
  nofile: number;
  /** RLIMIT_NPROC: processes and threads of the worker's uid (only applied where that uid is the worker's alone). */
  nproc: number;
  /** RLIMIT_FSIZE: the largest file the worker may write, in bytes. */
  fsize: number;
  /** RLIMIT_AS: address space in bytes. */
  as: number;
}

export type WorkerNetwork = "isolated" | "shared";

/** What the operator asked for (device-agent/agent/options.ts resolves these). */
export interface SandboxRequest {
  /** Uids for workers when the agent is root: [first, last], first being the workers' group; undefined: workers run as the agent's user. */
  workerUids: readonly [number, number] | undefined;
  /** "isolated": a network namespace of its own where the OS allows one. */
  workerNetwork: WorkerNetwork;
  /** Limits by board kind (resolved defaults and the operator's overrides). */
  limits: (kind: string) => WorkerLimits;
  /** Bytes of each session's tmpfs; 0: none. */
  diskBytes?: number;
}

/** How workers start on this host: what holds and what does not, decided once. */
export interface SandboxPlan {
  /** Per-worker uids (root only). */
  readonly users?: { readonly group: number; readonly first: number; readonly last: number };
  /** "netns": `unshare --net` (root); "userns": `unshare --user --map-root-user --net`; "shared": the host's network. */
  readonly network: "netns" | "userns" | "shared";
  /** Where the util-linux wrappers are. */
  readonly tools: { readonly unshare?: string; readonly setpriv?: string; readonly prlimit?: string };
  readonly limits: (kind: string) => WorkerLimits;
  /** Each session's folder is a tmpfs of this many bytes (session-disk.ts); 0: a plain folder on the agent's disk. */
  readonly diskBytes: number;
  /** What does not hold here, and why (logged at start, in the `sandbox` capability). */
  readonly notes: readonly string[];
}

/** Environment variables a worker gets from the agent's (by name or prefix); everything else stays behind. */
export const WORKER_ENV: readonly (string | RegExp)[] = [
  "PATH",
  "LANG",
  "LANGUAGE",
  "TZ",
  "NODE_OPTIONS",
  "KFARM_LOG",
  // bench/ab/timeline.ts: a grant's timestamps, each process's own (runtime/grant-trace.ts).
  "KFARM_TRACE_DIR",
  "LD_LIBRARY_PATH",
  // An ARM agent bundle run under qemu-user: the worker's launcher starts node under it too (docs/agent-bundle.md).
  "KFARM_EMULATOR",
  /^LC_[A-Z]+$/,
  /^CUDA_[A-Z_]+$/,
  /^NVIDIA_[A-Z_]+$/,
];

const TOOL_DIRS = ["/usr/bin", "/bin", "/usr/sbin", "/sbin"];

function findTool(name: string): string | undefined {
  for (const dir of [...(process.env.PATH ?? "").split(":").filter(Boolean), ...TOOL_DIRS]) {
    const p = join(dir, name);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** Probes, once: does `unshare ARGS true` work here? */
function works(unshare: string, args: string[]): boolean {
  const r = spawnSync(unshare, [...args, "--", "true"], { stdio: "ignore", timeout: 5000 });
  return r.status === 0;
}

/**
 * What this host allows for `request`: root gets per-worker uids and a
 * network namespace; a user gets a user+network namespace where the kernel
 * allows unprivileged ones; the rest is noted. `probe` false skips the
 * namespace probes (tests of argument building).
 */
export function resolveSandbox(request: SandboxRequest, opts: { isRoot?: boolean; probe?: boolean } = {}): SandboxPlan {
  const isRoot = opts.isRoot ?? process.getuid?.() === 0;
  const probe = opts.probe ?? true;
  const tools = { unshare: findTool("unshare"), setpriv: findTool("setpriv"), prlimit: findTool("prlimit") };
  const notes: string[] = [];
  let users: SandboxPlan["users"];
  if (request.workerUids && isRoot) {
    if (!tools.setpriv)
      throw new FarmError(
        "INVALID_ARGUMENT",
        "workerUids: the agent runs as root and would start workers as other users, but util-linux's setpriv is not installed; install util-linux or pass --worker-uids off",
      );
    const [first, last] = request.workerUids;
    users = { group: first, first: first + 1, last };
  } else if (!isRoot) {
    notes.push("workers run as the agent's user (per-worker users need root): they can read one another's session folders and the agent's files");
  } else {
    notes.push("workers run as root (--worker-uids off): a kernel can do anything root can");
  }
  let network: SandboxPlan["network"] = "shared";
  if (request.workerNetwork === "isolated") {
    if (!tools.unshare) notes.push("workers keep the network: util-linux's unshare is not installed");
    else if (isRoot && (!probe || works(tools.unshare, ["--net"]))) network = "netns";
    else if (!isRoot && (!probe || works(tools.unshare, ["--user", "--map-root-user", "--net"]))) network = "userns";
    else
      notes.push(`workers keep the network: ${isRoot ? "unshare --net" : "unshare --user --map-root-user --net (unprivileged user namespaces)"} failed here`);
  } else {
    notes.push("workers keep the network (--worker-network shared)");
  }
  if (!tools.prlimit) notes.push("workers run without resource limits: util-linux's prlimit is not installed");
  // RLIMIT_NPROC counts every process of a uid: only a uid (or user namespace) of the worker's own makes it the worker's limit.
  if (!users && network !== "userns")
    notes.push("no process limit: without a uid or user namespace of its own, RLIMIT_NPROC would count all of the agent user's processes");
  let diskBytes = 0;
  if (!request.diskBytes) notes.push("no per-session disk quota (--worker-disk off): a kernel can fill the agent's disk, one file of at most fsize at a time");
  else if (!users)
    notes.push(
      "no per-session disk quota: the session's tmpfs needs the agent as root with workers on uids of their own; a kernel can fill the agent's disk, one file of at most fsize at a time",
    );
  else if (probe && !canMountTmpfs())
    notes.push(
      "no per-session disk quota: mounting a tmpfs failed here (no CAP_SYS_ADMIN?); a kernel can fill the agent's disk, one file of at most fsize at a time",
    );
  else diskBytes = request.diskBytes;
  return { users, network, tools, limits: request.limits, diskBytes, notes };
}

/** Probes, once: can this agent mount (and detach) a tmpfs? */
function canMountTmpfs(): boolean {
  if (!SessionDisk.supported()) return false;
  const dir = mkdtempSync(join(tmpdir(), "kfarm-disk-probe-"));
  try {
    const disk = new SessionDisk(1 << 20);
    disk.mount(dir, 0);
    disk.unmount(dir);
    return true;
  } catch {
    return false;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One line for the log and the boards' `sandbox` capability. */
export function describeSandbox(plan: SandboxPlan, kind: string): string {
  const l = effectiveLimits(plan, kind);
  const limits =
    Object.entries(l)
      .filter(([, v]) => v > 0)
      .map(([k, v]) => `${k}=${v}`)
      .join(",") || "none";
  const users = plan.users ? `uids ${plan.users.first}-${plan.users.last}` : "agent's user";
  const disk = plan.diskBytes > 0 ? `${plan.diskBytes} per session (tmpfs)` : "unbounded";
  return `user=${users}; network=${plan.network === "shared" ? "shared" : `isolated (${plan.network})`}; limits=${limits}; disk=${disk}`;
}

/** The limits a worker of `kind` really gets: none without prlimit; no process limit where it would count others' processes. */
export function effectiveLimits(plan: SandboxPlan, kind: string): WorkerLimits {
  if (!plan.tools.prlimit) return { nofile: 0, nproc: 0, fsize: 0, as: 0 };
  const l = plan.limits(kind);
  return { ...l, nproc: plan.users || plan.network === "userns" ? l.nproc : 0 };
}

/**
 * The command that starts `node ARGS` for a worker of `kind` as `uid`
 * (undefined: the agent's user): wrappers first, each exec'ing the next.
 */
export function workerCommand(plan: SandboxPlan, kind: string, uid: number | undefined, node: readonly string[]): string[] {
  const argv: string[] = [];
  if (plan.network === "netns") argv.push(plan.tools.unshare!, "--net", "--");
  else if (plan.network === "userns") argv.push(plan.tools.unshare!, "--user", "--map-root-user", "--net", "--");
  if (plan.tools.setpriv) {
    if (plan.users && uid !== undefined)
      argv.push(plan.tools.setpriv, "--reuid", String(uid), "--regid", String(uid), "--groups", String(plan.users.group), "--no-new-privs", "--");
    // Not root: still no setuid escalation from inside a kernel.
    else argv.push(plan.tools.setpriv, "--no-new-privs", "--");
  }
  const l = effectiveLimits(plan, kind);
  const flags = (Object.entries(l) as [keyof WorkerLimits, number][]).filter(([, v]) => v > 0).map(([k, v]) => `--${k}=${v}:${v}`);
  if (flags.length > 0) argv.push(plan.tools.prlimit!, ...flags, "--");
  argv.push(...node);
  return argv;
}

/** The environment a worker gets: the allowed variables of `from`, and `extra`. */
export function workerEnv(from: NodeJS.ProcessEnv, extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(from)) {
    if (v !== undefined && WORKER_ENV.some((p) => (typeof p === "string" ? p === k : p.test(k)))) env[k] = v;
  }
  return { ...env, ...extra };
}

/**
 * Where the agents of a host claim worker uids: one file per uid in use,
 * holding the claiming agent's pid and nothing else — agents of every
 * version on a host read it as a number (one that could not would take a
 * live agent's uid for a dead one's). Its mtime tells a reused pid apart
 * (agent-identity.ts).
 */
export const UID_CLAIMS_DIR = "/run/kfarm-worker-uids";

/**
 * Hands out the uids of the plan, one per live worker: a uid comes back only
 * after every process it ran is dead (`release`), so no two workers, nor a
 * worker and the leftovers of a previous one, ever share a uid — across all
 * the agents of a host too (several agents take the same default range): a
 * uid is claimed by creating `<claims>/<uid>` exclusively; the claim of an
 * agent that died is taken over after killing what its workers left. A uid
 * some other process runs as (an account in the range) is skipped.
 */
export class UidAllocator {
  private readonly free: number[] = [];

  constructor(
    private readonly plan: SandboxPlan,
    private readonly claims = UID_CLAIMS_DIR,
  ) {
    if (!plan.users) return;
    for (let u = plan.users.first; u <= plan.users.last; u++) this.free.push(u);
    mkdirSync(claims, { recursive: true, mode: 0o700 });
  }

  /** A free uid; undefined when the plan has none; throws when every uid is taken. */
  take(): number | undefined {
    if (!this.plan.users) return undefined;
    for (let i = 0; i < this.free.length; i++) {
      const uid = this.free[i]!;
      if (!this.claim(uid)) continue;
      this.free.splice(i, 1);
      return uid;
    }
    throw new FarmError(
      "INTERNAL",
      `every worker uid ${this.plan.users.first}-${this.plan.users.last} is in use (by this host's agents or other processes); widen --worker-uids`,
    );
  }

  private claim(uid: number): boolean {
    const path = join(this.claims, String(uid));
    try {
      writeFileSync(path, String(process.pid), { flag: "wx", mode: 0o600 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const owner = claimant(path);
      if (!owner || owner.pid === process.pid || isRunning(owner)) return false;
      // Its agent died: what its worker left (a fork bomb's children) goes first.
      killAllOfSync(this.plan, uid);
      rmSync(path, { force: true });
      return this.claim(uid);
    }
    if (processesOf(uid).length > 0) {
      rmSync(path, { force: true });
      return false;
    }
    return true;
  }

  /**
   * Releases every claim (in the host's claims folder, whatever its range)
   * of an agent that is no longer running, after killing every process its
   * uid still runs, as release() does: for an agent at start. Returns those uids.
   */
  sweepDead(): number[] {
    if (!this.plan.users) return [];
    const released: number[] = [];
    for (const name of readdirSync(this.claims)) {
      if (!/^\d+$/.test(name)) continue;
      const path = join(this.claims, name);
      const owner = claimant(path);
      if (!owner || isRunning(owner)) continue;
      // Moved aside first (one rename wins): an agent taking the claim over at this moment keeps the one it wrote.
      const aside = `${path}.dead-${process.pid}`;
      try {
        renameSync(path, aside);
      } catch {
        continue; // taken over or released meanwhile
      }
      const moved = claimant(aside);
      if (moved && isRunning(moved)) {
        // Taken over between the read and the move: put it back, unless a third agent claimed the uid since.
        try {
          linkSync(aside, path);
        } catch {
          // claimed again meanwhile: that claim stands
        }
        rmSync(aside, { force: true });
        continue;
      }
      killAllOfSync(this.plan, Number(name));
      // Dead before the uid is handed out again: claim() skips a uid whose processes still run.
      waitUntilGone(Number(name), SWEEP_KILL_WAIT_MS);
      rmSync(aside, { force: true });
      released.push(Number(name));
    }
    return released.sort((a, b) => a - b);
  }

  /** Kills every process `uid` still runs (a kernel's children), then makes it available again. */
  async release(uid: number | undefined): Promise<void> {
    if (uid === undefined) return;
    await killAllOf(this.plan, uid);
    rmSync(join(this.claims, String(uid)), { force: true });
    this.free.push(uid);
  }

  /** release(), waiting: for an agent on its way out. */
  releaseSync(uid: number | undefined): void {
    if (uid === undefined) return;
    killAllOfSync(this.plan, uid);
    rmSync(join(this.claims, String(uid)), { force: true });
  }
}

/** Who holds the claim at `path`, and since when; undefined when it is gone or unreadable (a claim being written reads empty: not dead). */
function claimant(path: string): Identity | undefined {
  try {
    const text = readFileSync(path, "utf8");
    if (!/^\s*\d+\s*$/.test(text)) return undefined;
    return { pid: Number(text), claimedAtMs: statSync(path).mtimeMs };
  } catch {
    return undefined;
  }
}

/** How long an agent at start waits for a dead agent's uid's processes to die after SIGKILL. */
const SWEEP_KILL_WAIT_MS = 2000;

/** Waits (blocking: at agent start only) until `uid` runs no process, or `ms` passed. */
function waitUntilGone(uid: number, ms: number): void {
  const until = Date.now() + ms;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  while (processesOf(uid).length > 0 && Date.now() < until) Atomics.wait(pause, 0, 0, 10);
}

/**
 * Pids of the live processes whose real uid is `uid` (from /proc; none
 * where there is no /proc). A zombie is not live: it runs nothing and holds
 * nothing but its pid until its reaper — an init that may be slow to, or
 * never, reap (a container's) — collects it.
 */
export function processesOf(uid: number): number[] {
  const pids: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return pids;
  }
  for (const p of entries) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const status = readFileSync(`/proc/${p}/status`, "utf8");
      if (Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]) === uid && !/^State:\s+[ZX]/m.test(status)) pids.push(Number(p));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/**
 * SIGKILLs every process of `uid`: kill(-1) sent as that uid reaches exactly
 * its processes, atomically (a fork bomb cannot outrun it: a process with a
 * fatal signal pending cannot fork).
 */
export function killAllOf(plan: SandboxPlan, uid: number): Promise<void> {
  return new Promise((resolvePromise) => {
    const p = spawn(plan.tools.setpriv!, killArgs(uid), { stdio: "ignore" });
    p.on("exit", () => resolvePromise());
    p.on("error", () => resolvePromise());
  });
}

/** killAllOf, waiting: for an agent on its way out, whose event loop may not turn again. */
export function killAllOfSync(plan: SandboxPlan, uid: number): void {
  spawnSync(plan.tools.setpriv!, killArgs(uid), { stdio: "ignore", timeout: 5000 });
}

function killArgs(uid: number): string[] {
  return ["--reuid", String(uid), "--regid", String(uid), "--clear-groups", "--", "/bin/sh", "-c", "kill -KILL -1 2>/dev/null; exit 0"];
}

/**
 * Folders of the agent's scratch root for sandboxed workers: the root may be
 * crossed by workers but not listed (0711); a worker's home and a session's
 * folder are 0700 and owned by the worker's uid.
 */
export class WorkerDirs {
  constructor(
    private readonly plan: SandboxPlan,
    readonly root: string,
  ) {}

  /** Prepares the root (call once at agent start, after creating it). */
  prepare(): void {
    mkdirSync(join(this.root, "home"), { recursive: true });
    if (this.plan.users) {
      chmodTo(this.root, 0o711);
      chmodTo(join(this.root, "home"), 0o711);
    }
  }

  /** A fresh, empty home for a worker about to start as `uid` (its HOME and TMPDIR). */
  home(slot: string, uid: number | undefined): string {
    const dir = join(this.root, "home", slot);
    rmSync(dir, { recursive: true, force: true });
    this.own(dir, uid);
    return dir;
  }

  /** The folder of session `sessionId`, created empty for `uid`. */
  session(sessionId: string, uid: number | undefined): string {
    if (!/^[A-Za-z0-9_-]{1,128}$/.test(sessionId)) throw new FarmError("PROTOCOL_ERROR", `session id ${JSON.stringify(sessionId)} is not a plain name`);
    const dir = join(this.root, sessionId);
    try {
      rmSync(dir, { recursive: true, force: true });
      this.own(dir, uid);
    } catch (err) {
      // This ends the session, and its host hears why: the session's name, never the agent's path (kept as the cause).
      const code = (err as NodeJS.ErrnoException).code ?? "error";
      throw new FarmError(
        code === "ENOSPC" ? "TOO_LARGE" : "INTERNAL",
        `the agent cannot make session ${sessionId}'s folder: ${code}; its disk may be full or its scratch folder gone`,
        { cause: err, details: { errno: code } },
      );
    }
    return dir;
  }

  private own(dir: string, uid: number | undefined): void {
    mkdirSync(dir, { mode: 0o700 });
    chmodTo(dir, 0o700);
    if (uid !== undefined) chownSync(dir, uid, uid);
  }

  /**
   * A copy of the agent's file `path` that workers can read (under the root,
   * 0644), when workers run as other users and could not read it where it is.
   */
  share(path: string): string {
    if (!this.plan.users) return path;
    const dir = join(this.root, "lib");
    // Named by where it came from too: two boards' canaries may both be "canary.so".
    const dest = join(dir, `${createHash("sha256").update(resolve(path)).digest("hex").slice(0, 12)}-${basename(path)}`);
    try {
      mkdirSync(dir, { recursive: true, mode: 0o755 });
      chmodTo(dir, 0o755);
      copyFileSync(path, dest);
      chmodTo(dest, 0o644);
      return dest;
    } catch {
      // Missing or unreadable: the worker fails to load it and says so (a failed canary), as it would have.
      return path;
    }
  }
}

/** mkdir's mode is cut by the umask: set it exactly. */
function chmodTo(path: string, mode: number): void {
  chmodSync(path, mode);
}

/**
 * Throws when a worker running as another user could not read `path` (the
 * worker's script, the package's modules): every folder above it must be
 * crossable by others and the file readable by them.
 */
export function checkReadableByWorkers(plan: SandboxPlan, path: string, what: string): void {
  if (!plan.users) return;
  const full = resolve(path);
  const problem = (p: string, need: number, word: string) => {
    const s = statSync(p);
    if ((s.mode & need) === 0) {
      throw new FarmError(
        "INVALID_ARGUMENT",
        `workerUids: session workers run as uids ${plan.users!.first}-${plan.users!.last} and cannot ${word} ${p} (mode ${(s.mode & 0o777).toString(8)}), which holds ${what}; make it ${word === "read" ? "readable" : "crossable"} by others (chmod o+${word === "read" ? "r" : "x"}) or pass --worker-uids off`,
      );
    }
  };
  problem(full, 0o004, "read");
  for (let d = dirname(full); ; d = dirname(d)) {
    problem(d, 0o001, "cross");
    if (d === dirname(d)) break;
  }
}

const LIMIT_NAMES: readonly (keyof WorkerLimits)[] = ["nofile", "nproc", "fsize", "as"];

/**
 * `--worker-limits nofile=1024,nproc=256,fsize=1g,as=off`: the limits named
 * (sizes for fsize and as; "off" or 0 lifts one); the others stay unset.
 */
export function parseWorkerLimits(text: string, where: string): Partial<WorkerLimits> {
  const out: Partial<WorkerLimits> = {};
  for (const part of text
    .split(",")
    .map((p) => p.trim())
    .filter(Boolean)) {
    const eq = part.indexOf("=");
    const name = part.slice(0, eq) as keyof WorkerLimits;
    const value = part.slice(eq + 1).trim();
    if (eq <= 0 || !LIMIT_NAMES.includes(name))
      throw new FarmError(
        "INVALID_ARGUMENT",
        `${where}: "${part}" is not LIMIT=VALUE with LIMIT one of ${LIMIT_NAMES.join(", ")} (e.g. nofile=1024,nproc=256,fsize=1g,as=off)`,
      );
    if (value === "off") out[name] = 0;
    else if (name === "fsize" || name === "as") out[name] = parseBytes(value, `${where} ${name}`);
    else if (/^\d+$/.test(value)) out[name] = Number(value);
    else throw new FarmError("INVALID_ARGUMENT", `${where}: ${name}=${JSON.stringify(value)} must be a whole number or "off"`);
  }
  return out;
}

/** `--worker-uids 61000-61999` (61000 the workers' group, 61001… their uids), or "off". */
export function parseWorkerUids(text: string, where: string): readonly [number, number] | undefined {
  if (text === "off") return undefined;
  const m = /^(\d+)-(\d+)$/.exec(text.trim());
  const first = Number(m?.[1]);
  const last = Number(m?.[2]);
  if (!m || !(first >= 1000 && last > first && last < 2 ** 32 - 1)) {
    throw new FarmError(
      "INVALID_ARGUMENT",
      `${where}: ${JSON.stringify(text)} must be FIRST-LAST with 1000 ≤ FIRST < LAST (ids no account uses; FIRST is the workers' group, the rest their uids), or "off"`,
    );
  }
  return [first, last];
}
