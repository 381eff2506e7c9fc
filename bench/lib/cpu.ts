/**
 * CPU seconds each process of the farm spends on a measured stretch: the
 * host (this process), the tracker, the agent and its session workers.
 */
import type { BenchFarm } from "./farm.ts";
import { cpuSnapshot } from "./procs.ts";

export interface CpuMeter {
  /** CPU seconds by process (workers summed) since the meter started. */
  used(): Record<string, number>;
  /** CPU seconds per GB (10^9 bytes) moved, by process. */
  perGB(bytes: number): string;
}

export function startCpuMeter(farm: BenchFarm): CpuMeter {
  const pids = (): Record<string, number> => {
    const p: Record<string, number> = { host: process.pid, tracker: farm.trackerPid, agent: farm.agentPid };
    for (const w of farm.workerPids()) p[`worker ${w}`] = w;
    return p;
  };
  const before = cpuSnapshot(pids());
  const used = () => {
    const after = cpuSnapshot(pids());
    const out: Record<string, number> = {};
    for (const [name, v] of Object.entries(after)) {
      const key = name.startsWith("worker") ? "worker" : name;
      out[key] = (out[key] ?? 0) + v - (before[name] ?? v);
    }
    return out;
  };
  const perGB = (bytes: number) => {
    const scale = 1e9 / bytes;
    const u = used();
    const total = Object.values(u).reduce((a, b) => a + b, 0);
    return (
      Object.entries(u)
        .filter(([, s]) => s * scale >= 0.05)
        .map(([name, s]) => `${name} ${(s * scale).toFixed(2)}`)
        .join(", ") + `; total ${(total * scale).toFixed(2)} CPU-s/GB`
    );
  };
  return { used, perGB };
}
