/**
 * What Linux's /proc says about a running process: its executable, its
 * command line, its children, and its resident memory.
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

/** Its working directory: a session worker's is its session's folder while it serves (as root, another uid's too). */
export function cwdOf(pid: number): string {
  return readlinkSync(`/proc/${pid}/cwd`);
}

export function exeOf(pid: number): string {
  return readlinkSync(`/proc/${pid}/exe`);
}

/** Its arguments joined by spaces; "" once it is gone. */
export function cmdlineOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");
  } catch {
    return "";
  }
}

export function childrenOf(pid: number): number[] {
  const kids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // Fields after the command name (which may hold spaces), which ends at the last ')': state ppid …
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === pid) kids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return kids;
}

/** A field of /proc/PID/status in KiB (VmRSS: resident now, VmHWM: the most it has been). */
export function statusKiB(pid: number, field: "VmRSS" | "VmHWM"): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB$`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (!m) throw new Error(`/proc/${pid}/status has no ${field}`);
  return Number(m[1]);
}

export interface Mapping {
  readonly start: bigint;
  readonly end: bigint;
  readonly perms: string;
  /** The file, or [heap], [stack], …; "" for anonymous memory. */
  readonly name: string;
  readonly rssKiB: number;
}

/** The mappings of /proc/PID/smaps with their resident sizes. */
export function mappingsOf(pid: number): Mapping[] {
  const out: Mapping[] = [];
  let current: { -readonly [K in keyof Mapping]: Mapping[K] } | undefined;
  for (const line of readFileSync(`/proc/${pid}/smaps`, "utf8").split("\n")) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      current = { start: BigInt(`0x${head[1]}`), end: BigInt(`0x${head[2]}`), perms: head[3]!, name: head[4]!, rssKiB: 0 };
      out.push(current);
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB$/.exec(line);
    if (rss && current) current.rssKiB = Number(rss[1]);
  }
  return out;
}
