/**
 * A/B probe (bench/ab/swap.sh), and BENCHMARKS.md's timeline of an idle
 * grant: where its time goes, process by process. Runs idle.ts's loop (the
 * board free and the farm quiet before each grant; RUNS, default 25, after 5
 * warm-ups) with $KFARM_TRACE_DIR set for the farm's processes and this one
 * (runtime/grant-trace.ts), then prints each step's median time from the
 * request, in order, and one line of p50s last.
 */
import { chmodSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const dir = mkdtempSync(join(tmpdir(), "kfarm-trace-"));
// Workers run as uids of their own (as root): each writes its own file here.
chmodSync(dir, 0o1777);
// Before the modules that read it load, and inherited by the farm's processes (workers get it through WORKER_ENV).
process.env.KFARM_TRACE_DIR = dir;
const { settle, startBenchFarm } = await import("../lib/farm.ts");
const { nowMs, percentile } = await import("../lib/stats.ts");
const { traceGrant } = await import("../../runtime/index.ts");

const runs = Number(process.env.RUNS ?? 25);
const farm = await startBenchFarm();
const windows: Array<[number, number]> = [];
const total: number[] = [];
for (let i = 0; i < 5 + runs; i++) {
  await farm.waitFree();
  await settle(farm);
  const t0 = performance.timeOrigin + performance.now();
  const s0 = nowMs();
  traceGrant("host: request()");
  const s = await farm.client.request("cpu");
  await s.listdir();
  traceGrant("host: listdir answered");
  const s1 = nowMs();
  await s.close();
  if (i < 5) continue;
  windows.push([t0, performance.timeOrigin + performance.now()]);
  total.push(s1 - s0);
}
await farm.stop();

const marks: Array<{ at: number; step: string }> = [];
for (const f of readdirSync(dir))
  for (const line of readFileSync(join(dir, f), "utf8").split("\n")) if (line) marks.push(JSON.parse(line) as { at: number; step: string });
rmSync(dir, { recursive: true, force: true });
const byStep = new Map<string, number[]>();
for (const [from, to] of windows) {
  for (const m of marks) {
    if (m.at < from || m.at > to) continue;
    const list = byStep.get(m.step) ?? [];
    list.push(m.at - from);
    byStep.set(m.step, list);
  }
}
const rows = [...byStep].map(([step, at]) => ({ step, p50: percentile(at, 50), n: at.length })).sort((a, b) => a.p50 - b.p50);
for (const r of rows) console.log(`${r.p50.toFixed(2).padStart(7)} ms  ${r.step}${r.n !== runs ? ` (in ${r.n} of ${runs} grants)` : ""}`);
console.log(`idle grant → listdir p50 ${percentile(total, 50).toFixed(2)} ms (traced), ${runs} grants`);
process.exit(0);
