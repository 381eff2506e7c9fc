/**
 * Who holds a scratch folder or a worker uid: an agent process, named by its
 * pid and the kernel's start time of that process (`/proc/PID/stat`, field
 * 22). The pid alone is not enough to call a holder dead or alive: pids are
 * reused, and a holder that died long ago could look alive for as long as
 * an unrelated process runs under its old pid — leaving its folder and uids
 * claimed forever. With the start time, a reused pid is told apart.
 */
import { readFileSync } from "node:fs";

/**
 * A process as something it holds names it: its pid, and either its start
 * time (clock ticks since boot, as a scratch folder's `agent.pid` says) or
 * when the thing was claimed (a uid claim's mtime: claims stay a bare pid,
 * which every agent version on the host reads). Neither: the pid alone.
 */
export type Identity = { pid: number; start?: string; claimedAtMs?: number };

/** Clock ticks per second of /proc's times (sysconf(_SC_CLK_TCK): 100 on every Linux we run on). */
const TICKS_PER_SECOND = 100;
/**
 * This much either way is no evidence: the boot time is whole seconds, a
 * claim's mtime is written after its agent started, and an agent run by
 * qemu-user (tests/arm-bundle.test.ts) writes the start time qemu emulates,
 * a few ticks after the kernel's (which every other agent reads). A pid is
 * reused within this long of its last start only after a full wrap of the
 * pid space in that time.
 */
const START_SLACK_MS = 1500;

/** When the kernel booted, in ms since the epoch (/proc/stat btime), or undefined. */
function bootMs(): number | undefined {
  try {
    const btime = Number(/^btime (\d+)$/m.exec(readFileSync("/proc/stat", "utf8"))?.[1]);
    return btime > 0 ? btime * 1000 : undefined;
  } catch {
    return undefined;
  }
}

/** The kernel's start time of process `pid`, or undefined (gone, or no /proc). */
function startTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Field 2 (the command) may hold spaces and parentheses: count from the last ")".
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}

/** This process, as it writes itself into what it holds. */
export function selfIdentity(): string {
  const start = startTime(process.pid);
  return start ? `${process.pid} ${start}` : String(process.pid);
}

/** "PID" or "PID START", as selfIdentity() wrote it; undefined when the text is neither. */
export function parseIdentity(text: string): Identity | undefined {
  const m = /^\s*(\d+)(?:\s+(\d+))?\s*$/.exec(text);
  if (!m) return undefined;
  return { pid: Number(m[1]), ...(m[2] ? { start: m[2] } : {}) };
}

/**
 * Whether the process named is still running: its pid is alive (a process
 * of another user counts: EPERM) and, where the start time was written, it
 * is the same process (its start within START_SLACK_MS), not a later one
 * given the same pid.
 */
export function isRunning(who: Identity): boolean {
  if (!(who.pid > 0)) return false;
  try {
    process.kill(who.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  const now = startTime(who.pid);
  // No /proc to look at: believe the pid.
  if (now === undefined) return true;
  if (who.start !== undefined) return (Math.abs(Number(now) - Number(who.start)) * 1000) / TICKS_PER_SECOND <= START_SLACK_MS;
  if (who.claimedAtMs !== undefined) {
    // A process that started after the claim was written cannot have written it: its pid was reused.
    const boot = bootMs();
    if (boot !== undefined && boot + (Number(now) * 1000) / TICKS_PER_SECOND > who.claimedAtMs + START_SLACK_MS) return false;
  }
  return true;
}
