/**
 * What an agent that died without its clean-up (SIGKILL, a crash, the OOM
 * killer) left behind, found and removed by the next agent to start
 * (docs/sandbox.md, "What a dead agent leaves"):
 *
 * * its **scratch folder** (`<parent>/kfarm-agent-PID`): copies of users'
 *   modules in its content store and sessions' folders, the workers' homes,
 *   its link socket — with every session tmpfs mounted in it detached first;
 * * its **uid claims** (`/run/kfarm-worker-uids/UID`), with every process
 *   still running as those uids killed (a kernel's forked children outlive
 *   their worker: they have no parent-death signal).
 *
 * Several agents may share a parent folder (every agent's default is the
 * system's temporary folder) and a host's claims: only what a holder that
 * is no longer running left is touched. Who holds a folder is written in it
 * (`agent.pid`: pid and start time, agent-identity.ts), so that a reused pid
 * never makes a dead agent's folder look alive, nor a live one's dead.
 */
import { lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { FarmError } from "../../protos/index.ts";
import { isRunning, parseIdentity, selfIdentity, type Identity } from "./agent-identity.ts";
import type { UidAllocator } from "./sandbox.ts";
import { SessionDisk } from "../common/session-disk.ts";

/** An agent's default scratch folder is `<tmp>/kfarm-agent-PID` (options.ts). */
const SCRATCH_NAME = /^kfarm-agent-(\d+)$/;
/** The file in a scratch folder that names the agent holding it. */
export const HOLDER_FILE = "agent.pid";

/** What the sweep found and removed; every list empty: nothing. */
export interface Leftovers {
  /** Scratch folders of dead agents, removed. */
  folders: string[];
  /** Session tmpfs of dead agents, detached. */
  mounts: number;
  /** Worker uids a dead agent had claimed: their processes killed, their claims removed. */
  uids: number[];
  /** What could not be removed, and why (another user's folder, when this agent is not root). */
  failed: string[];
}

/**
 * The agent holding scratch folder `dir`: as its holder file says, else
 * (an agent of before the file, or one between making the folder and
 * writing the file) the pid in a default name; undefined: nothing says.
 */
function holderOf(dir: string): Identity | undefined {
  try {
    const written = parseIdentity(readFileSync(join(dir, HOLDER_FILE), "utf8"));
    if (written) return written;
  } catch {
    // no file (yet)
  }
  const m = SCRATCH_NAME.exec(basename(dir));
  return m ? { pid: Number(m[1]) } : undefined;
}

/** A folder some agent held, whose agent no longer runs. */
function isDeadAgentsFolder(dir: string): boolean {
  const holder = holderOf(dir);
  return holder !== undefined && !isRunning(holder);
}

/**
 * Finds and removes what dead agents left: scratch folders beside
 * `workRoot` (and `workRoot` itself, left by a dead agent given the same
 * one), the session tmpfs mounted anywhere in a dead agent's scratch
 * folder (`mounts`: only as root, where they can be), and dead agents'
 * uid claims (`uids`). Throws when `workRoot` is held by a running agent:
 * two agents must not share one scratch folder (each removes it on exit).
 */
export function sweepLeftovers(workRoot: string, opts: { mounts: boolean; uids?: UidAllocator }): Leftovers {
  const found: Leftovers = { folders: [], mounts: 0, uids: [], failed: [] };
  const own = holderOf(workRoot);
  if (own && own.pid !== process.pid && isRunning(own) && exists(workRoot)) {
    throw new FarmError(
      "INVALID_ARGUMENT",
      `workRoot ${workRoot} is the scratch folder of a running agent (pid ${own.pid}); give every agent a scratch folder of its own`,
      { details: { option: "workRoot" } },
    );
  }
  // First what dead agents' workers left running: root removes their folders only once nothing of theirs can swap a
  // link into them mid-removal (pool.ts removes a killed worker's folder the same way, after its uid).
  if (opts.uids) found.uids = opts.uids.sweepDead();
  const parent = dirname(workRoot);
  const stale: string[] = [];
  let names: string[] = [];
  try {
    names = readdirSync(parent);
  } catch {
    // no parent yet: nothing was left in it
  }
  for (const name of names) {
    const dir = join(parent, name);
    if (dir !== workRoot && !SCRATCH_NAME.test(name)) continue;
    // A link is nobody's scratch folder: never followed into a removal.
    if (!lstatSync(dir, { throwIfNoEntry: false })?.isDirectory()) continue;
    if (dir === workRoot ? holderOf(dir) !== undefined && (own?.pid === process.pid || !isRunning(own!)) : isDeadAgentsFolder(dir)) stale.push(dir);
  }
  // A dead agent's session tmpfs, wherever its scratch folder was (another agent's TMPDIR): they hold RAM.
  if (opts.mounts) {
    found.mounts = SessionDisk.detachWhere(
      (mountPoint) => isDeadAgentsFolder(dirname(mountPoint)) || stale.some((d) => mountPoint.startsWith(`${d}/`)),
      (mountPoint) => {
        if (!stale.includes(dirname(mountPoint))) rmSync(mountPoint, { recursive: true, force: true });
      },
    );
  }
  for (const dir of stale) {
    try {
      rmSync(dir, { recursive: true, force: true });
      found.folders.push(dir);
    } catch (err) {
      found.failed.push(`${dir}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  }
  return found;
}

/** Makes the scratch folder `workRoot` (0700) and writes this agent in it as its holder. */
export function holdScratch(workRoot: string): void {
  mkdirSync(workRoot, { recursive: true, mode: 0o700 });
  writeFileSync(join(workRoot, HOLDER_FILE), selfIdentity(), { mode: 0o600 });
}

/** One line for the log, or undefined when nothing was found. */
export function describeLeftovers(l: Leftovers): string | undefined {
  if (l.folders.length + l.mounts + l.uids.length + l.failed.length === 0) return undefined;
  const parts = [
    l.folders.length > 0 ? `removed ${l.folders.length} scratch folder(s) (${l.folders.join(", ")})` : "",
    l.mounts > 0 ? `detached ${l.mounts} session tmpfs` : "",
    l.uids.length > 0 ? `released ${l.uids.length} worker uid claim(s) (${l.uids.join(", ")}), killing what ran as them` : "",
    l.failed.length > 0 ? `could not remove ${l.failed.join("; ")}` : "",
  ];
  return `cleaned what agents that died left: ${parts.filter(Boolean).join("; ")}`;
}

function exists(path: string): boolean {
  return lstatSync(path, { throwIfNoEntry: false }) !== undefined;
}
