/**
 * Who holds a scratch folder or a worker uid: an agent process, named by its
 * pid and the kernel's start time of that process (`/proc/PID/stat`, field
 * 22). The pid alone is not enough to call a holder dead or alive: pids are
 * reused, and a holder that died long ago could look alive for as long as
 * an unrelated process runs under its old pid — leaving its folder and uids
 * claimed forever. With the start time, a reused pid is told apart.
 */
import { readFileSync } from "node:fs";

/** "PID START" (START: clock ticks since boot; absent where there is no /proc). */
export type Identity = { pid: number; start?: string };

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
 * is the same process, not a later one given the same pid.
 */
export function isRunning(who: Identity): boolean {
  if (!(who.pid > 0)) return false;
  try {
    process.kill(who.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  if (who.start === undefined) return true;
  const now = startTime(who.pid);
  // No /proc to look at: believe the pid.
  return now === undefined || now === who.start;
}
