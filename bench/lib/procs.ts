/**
 * What /proc says about the processes a benchmark runs: resident memory,
 * CPU time, children, and the CPUs a process may run on.
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100;
  } catch {
    return 100;
  }
})();

/** Resident set size in bytes (VmRSS), or NaN when the process is gone. */
export function rssBytes(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** The CPUs `pid` may run on, as /proc prints them ("0-1", "0"). */
export function allowedCpus(pid: number | "self" = "self"): string {
  const m = /Cpus_allowed_list:\s+(\S+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m?.[1] ?? "?";
}

function stat(pid: number): string[] | undefined {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces; fields after it are plain.
    return s.slice(s.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

/** User + system CPU seconds `pid` has used so far (0 when it is gone). */
export function cpuSeconds(pid: number): number {
  const f = stat(pid);
  if (!f) return 0;
  // After the name: state(0) ppid(1) ... utime(11) stime(12).
  return (Number(f[11]) + Number(f[12])) / CLOCK_TICKS;
}

/** Live direct children of `pid`. */
export function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const f = stat(Number(name));
    if (f && Number(f[1]) === pid && f[0] !== "Z") out.push(Number(name));
  }
  return out;
}

/** CPU seconds of several processes, to diff around a measurement. */
export function cpuSnapshot(pids: Record<string, number>): Record<string, number> {
  const snap: Record<string, number> = {};
  for (const [name, pid] of Object.entries(pids)) snap[name] = pid === process.pid ? selfCpuSeconds() : cpuSeconds(pid);
  return snap;
}

export function selfCpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

export function loadAverage(): string {
  try {
    return readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  } catch {
    return "?";
  }
}

/** Whether util-linux `taskset` is on PATH. */
export function hasTaskset(): boolean {
  try {
    execFileSync("taskset", ["-p", String(process.pid)], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

function cpuTicks(): { busy: number; total: number; steal: number } {
  const f = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = f.reduce((a, b) => a + b, 0);
  // idle + iowait are not busy; steal counts as busy (someone else had the CPU).
  return { busy: total - f[3]! - (f[4] ?? 0), total, steal: f[7] ?? 0 };
}

/** Starts counting the hypervisor's steal time; the function returns its share of all CPU time since. */
export function stealMeter(): () => number {
  const a = cpuTicks();
  return () => {
    const b = cpuTicks();
    return b.total > a.total ? (b.steal - a.steal) / (b.total - a.total) : 0;
  };
}

/**
 * How busy the machine is while this process idles for `ms`: busy CPU time of
 * every process but this one, in CPUs (0 = quiet, 2 = both vCPUs taken).
 */
export async function machineBusy(ms = 1000): Promise<number> {
  const a = cpuTicks();
  const self0 = selfCpuSeconds();
  await new Promise((r) => setTimeout(r, ms));
  const b = cpuTicks();
  const cpus = (b.total - a.total) / CLOCK_TICKS / (ms / 1e3);
  const busyS = (b.busy - a.busy) / CLOCK_TICKS - (selfCpuSeconds() - self0);
  return Math.max(0, (busyS / ((b.total - a.total) / CLOCK_TICKS)) * cpus);
}

/**
 * Waits until the processes `pids()` lists have used < 10 ms of CPU in 150 ms
 * (a worker booting, a GC tail), so that CPU does not land in a measurement.
 * Gives up after `timeoutMs`.
 */
export async function settleProcesses(pids: () => number[], timeoutMs = 8000): Promise<void> {
  const busy = () => pids().reduce((a, p) => a + cpuSeconds(p), 0);
  const until = Date.now() + timeoutMs;
  let last = busy();
  while (Date.now() < until) {
    await new Promise((r) => setTimeout(r, 150));
    const now = busy();
    if (now - last < 0.01) return;
    last = now;
  }
}
