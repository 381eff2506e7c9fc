/**
 * A/B probe (bench/ab/swap.sh): the CPU each process of the farm spends on one idle grant → listdir (the timed
 * window of idle.ts), from /proc/PID/schedstat (nanoseconds on a CPU). RUNS (default 25) grants after 5 warm-ups.
 * Prints one line: the wall p50 and each process's CPU µs per grant, p50.
 */
import { readFileSync } from "node:fs";
import { settle, startBenchFarm } from "../lib/farm.ts";
import { nowMs, percentile } from "../lib/stats.ts";

const runs = Number(process.env.RUNS ?? 25);
const farm = await startBenchFarm();
const onCpuNs = (pid: number | "self") => {
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ")[0]);
  } catch {
    return 0;
  }
};
const roles = (): Record<string, (number | "self")[]> => ({ host: ["self"], tracker: [farm.trackerPid], agent: [farm.agentPid], workers: farm.workerPids() });
const total = (pids: (number | "self")[]) => pids.reduce<number>((a, p) => a + onCpuNs(p), 0);
const cpu: Record<string, number[]> = { host: [], tracker: [], agent: [], workers: [] };
const wall: number[] = [];
for (let i = 0; i < 5 + runs; i++) {
  await farm.waitFree();
  await settle(farm);
  const r = roles();
  const before: Record<string, number> = Object.fromEntries(Object.entries(r).map(([k, pids]) => [k, total(pids)]));
  const t0 = nowMs();
  const s = await farm.client.request("cpu");
  await s.listdir();
  const t1 = nowMs();
  const after: Record<string, number> = Object.fromEntries(Object.entries(r).map(([k, pids]) => [k, total(pids)]));
  await s.close();
  if (i < 5) continue;
  wall.push(t1 - t0);
  for (const k of Object.keys(cpu)) cpu[k]!.push((after[k]! - before[k]!) / 1e3);
}
await farm.stop();
console.log(
  `idle grant → listdir p50 ${percentile(wall, 50).toFixed(2)} ms; CPU µs p50: ` +
    Object.entries(cpu)
      .map(([k, v]) => `${k} ${percentile(v, 50).toFixed(0)}`)
      .join(", "),
);
process.exit(0);
