/**
 * Benchmark 1: a session grant with a free board → first call done, and
 * sessions per second on one board back to back (request → call → close).
 *
 * Baseline, same run: a grpc-js unary call (Summary) to the same tracker
 * process — the cheapest exchange a host can have with the farm.
 */
import { compileVadd } from "../tests/helpers/kernels.ts";
import { settle, startBenchFarm } from "./lib/farm.ts";
import { fmtMs, fmtRatio, nowMs, percentile, printTable, verdict, type Row } from "./lib/stats.ts";

const GRANT_WARMUP = 5;
const GRANT_RUNS = 60;
const MODULE_RUNS = 12;
const UNARY_WARMUP = 200;
const UNARY_RUNS = 1000;
const RATE_SECONDS = 4;

export const TARGET_GRANT_MS = 2;
export const TVM_GRANT_MS = 48;
export const TARGET_SESSIONS_PER_S = 200;
export const TVM_SESSIONS_PER_S = 10.5;

export async function benchGrant(): Promise<void> {
  const [farm, module] = await Promise.all([startBenchFarm(), compileVadd()]);
  try {
    const client = farm.client;

    // Baseline: back-to-back unary calls to the same tracker.
    for (let i = 0; i < UNARY_WARMUP; i++) await client.summary();
    const unary: number[] = [];
    const u0 = nowMs();
    for (let i = 0; i < UNARY_RUNS; i++) {
      const t0 = nowMs();
      await client.summary();
      unary.push(nowMs() - t0);
    }
    const unaryPerS = UNARY_RUNS / ((nowMs() - u0) / 1e3);
    const unaryP50 = percentile(unary, 50);

    // Grant → first call (listdir: needs no module, leaves the worker reusable).
    const total: number[] = [];
    const grant: number[] = [];
    const first: number[] = [];
    const grantWorkers = new Set<number>();
    for (let i = 0; i < GRANT_WARMUP + GRANT_RUNS; i++) {
      await farm.waitFree();
      await settle(farm);
      if (i >= GRANT_WARMUP) farm.workerPids().forEach((p) => grantWorkers.add(p));
      const t0 = nowMs();
      const s = await client.request("cpu");
      const t1 = nowMs();
      await s.listdir();
      const t2 = nowMs();
      await s.close();
      if (i < GRANT_WARMUP) continue;
      total.push(t2 - t0);
      grant.push(t1 - t0);
      first.push(t2 - t1);
    }

    // Grant → upload + load + nop: loading a module taints the worker, so every
    // session here runs on a freshly started one (waitFree waits for it).
    const withModule: number[] = [];
    const loadPart: number[] = [];
    for (let i = 0; i < MODULE_RUNS + 1; i++) {
      await farm.waitFree();
      const t0 = nowMs();
      const s = await client.request("cpu");
      const t1 = nowMs();
      await s.upload(module);
      const nop = (await s.loadModule(module.name)).getFunction("nop");
      await nop();
      const t2 = nowMs();
      await s.close();
      if (i === 0) continue;
      withModule.push(t2 - t0);
      loadPart.push(t2 - t1);
    }

    // Sessions per second, back to back on one board: request → listdir → close.
    await farm.waitFree();
    const seen = new Set<number>(farm.workerPids());
    const sampler = setInterval(() => farm.workerPids().forEach((p) => seen.add(p)), 25);
    const startWorkers = seen.size;
    let sessions = 0;
    const r0 = nowMs();
    while (nowMs() - r0 < RATE_SECONDS * 1e3) {
      const s = await client.request("cpu");
      await s.listdir();
      await s.close();
      sessions++;
    }
    const perS = sessions / ((nowMs() - r0) / 1e3);
    clearInterval(sampler);
    const spawned = seen.size - startWorkers;

    const p50 = percentile(total, 50);
    const rows: Row[] = [
      {
        figure: "grant → first call (listdir), p50",
        value: fmtMs(p50),
        target: `≤ ${TARGET_GRANT_MS} ms`,
        verdict: verdict(p50 <= TARGET_GRANT_MS),
        baseline: `grpc unary p50 ${fmtMs(unaryP50)}`,
        ratio: `${fmtRatio(p50 / unaryP50)} unary; TVM ${TVM_GRANT_MS} ms = ${fmtRatio(TVM_GRANT_MS / p50)} ours`,
      },
      { figure: "  p10 / p90", value: `${fmtMs(percentile(total, 10))} / ${fmtMs(percentile(total, 90))}`, target: "", verdict: "", baseline: "", ratio: "" },
      { figure: "  request() (grant reply), p50", value: fmtMs(percentile(grant, 50)), target: "", verdict: "", baseline: "", ratio: fmtRatio(percentile(grant, 50) / unaryP50) + " unary" },
      { figure: "  first listdir after grant, p50", value: fmtMs(percentile(first, 50)), target: "", verdict: "", baseline: "", ratio: fmtRatio(percentile(first, 50) / unaryP50) + " unary" },
      {
        figure: "grant → upload+load+nop call, p50",
        value: fmtMs(percentile(withModule, 50)),
        target: "",
        verdict: "",
        baseline: `grpc unary p50 ${fmtMs(unaryP50)}`,
        ratio: `${fmtRatio(percentile(withModule, 50) / unaryP50)} unary`,
      },
      { figure: "  of which upload+load+nop, p50", value: fmtMs(percentile(loadPart, 50)), target: "", verdict: "", baseline: "", ratio: "" },
      {
        figure: "sessions/s, one board (request→listdir→close)",
        value: `${perS.toFixed(0)}/s`,
        target: `≥ ${TARGET_SESSIONS_PER_S}/s`,
        verdict: verdict(perS >= TARGET_SESSIONS_PER_S),
        baseline: `grpc unary ${unaryPerS.toFixed(0)}/s`,
        ratio: `${fmtRatio(unaryPerS / perS)} unary per session; ${fmtRatio(perS / TVM_SESSIONS_PER_S)} TVM (10–11/s)`,
      },
    ];
    printTable("1. session grant → first call; sessions per second (1 CPU board, tracker + agent as child processes)", rows, [
      `${GRANT_RUNS} grants (after ${GRANT_WARMUP} warm-ups), each with the board free (polled, untimed); ${MODULE_RUNS} module grants; rate over ${RATE_SECONDS} s (${sessions} sessions).`,
      `Worker processes seen during the ${GRANT_RUNS} timed grants: ${grantWorkers.size} (a new one means the agent forked a worker during a timed grant).`,
      `Worker processes started during the rate run: ${spawned} for ${sessions} sessions.`,
    ]);
  } finally {
    await farm.stop();
  }
}
