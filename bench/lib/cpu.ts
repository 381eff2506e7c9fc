/**
 * CPU seconds each process of the farm spends on a measured stretch: the
 * host (this process), the tracker, and the agent's session workers.
 */
import type { BenchFarm } from "./farm.ts";
import { cpuSnapshot } from "./procs.ts";

export interface CpuMeter {
  /** CPU seconds per GB (10^9 bytes) moved, by process, since the meter started. */
  perGB(bytes: number): string;
}

export function startCpuMeter(farm: BenchFarm): CpuMeter {
  const pids = (): Record<string, number> => {
    const p: Record<string, number> = { host: process.pid, tracker: farm.trackerPid, agent: farm.agentPid };
    for (const w of farm.workerPids()) p[`worker ${w}`] = w;
    return p;
  };
  const before = cpuSnapshot(pids());
  return {
    perGB(bytes) {
      const after = cpuSnapshot(pids());
      const used: Record<string, number> = {};
      for (const [name, v] of Object.entries(after)) {
        const key = name.startsWith("worker") ? "worker" : name;
        used[key] = (used[key] ?? 0) + v - (before[name] ?? v);
      }
      return Object.entries(used)
        .filter(([, s]) => s > 0.005)
        .map(([name, s]) => `${name} ${(s / (bytes / 1e9)).toFixed(2)}`)
        .join(", ") + " CPU-s/GB";
    },
  };
}
