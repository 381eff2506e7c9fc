/**
 * Benchmark 7: a CUDA board on a real GPU.
 *
 * - Timing fidelity: every workload of bench/cuda/workloads.ts (5 µs – 5 ms)
 *   timed by the farm and by the native harness (same module file, same
 *   launch, CUDA events in C) in the same run; target within 1 % for ≥ 10 µs.
 * - Copy bandwidth: the copy kernel's bytes/s as the farm measured it, against
 *   the device-to-device cuMemcpy ceiling measured natively in the same run.
 * - Worker start on a GPU board (Node, the CUDA context, the tracker
 *   connection), p50, and what a host sees of it: each session below loads a
 *   module, so each runs on a fresh worker that the pool started beforehand.
 *
 * Skipped, with the reason, where there is no GPU.
 */
import type { CompiledModule } from "../host-sdk/index.ts";
import { cudaSkipReason } from "../tests/helpers/gpu.ts";
import { compileVadd } from "../tests/helpers/kernels.ts";
import { startFarm, waitForFreeBoards } from "../tests/helpers/processes.ts";
import { REPEATS, ROUNDS, compileWorkloads, measureFidelity, type FidelityRun } from "./lib/cuda-fidelity.ts";
import { runNativeTimer } from "./lib/native-cuda.ts";
import { fmtRatio, median, nowMs, percentile, printTable, verdict, type Row } from "./lib/stats.ts";

const FIDELITY_FLOOR_US = 10;
const TOLERANCE = 0.01;
const BANDWIDTH_TARGET = 0.85;
const FRESH_WORKER_SESSIONS = 8;

/** Device-to-device cuMemcpy of `bytes`, GB/s, timed natively with events. */
async function copyCeilingGBps(run: FidelityRun, bytes: number): Promise<number> {
  const r = await runNativeTimer(run.nativeTimer, {
    module: run.moduleFile,
    kernel: "@memcpy_dtod",
    grid: [1, 1, 1],
    block: [1, 1, 1],
    args: [{ buf: bytes }, { buf: bytes }],
    number: 20,
    repeat: 10,
  });
  // A copy reads and writes every byte.
  return (2 * bytes) / (median(r.resultsMs) / 1e3) / 1e9;
}

/**
 * Grant → first call on a worker the pool started beforehand: each session
 * loads `module`, which taints its worker, so the next session gets the successor.
 */
async function freshWorkerGrants(
  farm: Awaited<ReturnType<typeof startFarm>>,
  key: string,
  module: CompiledModule,
): Promise<{ starts: number[]; grants: number[] }> {
  const starts: number[] = [];
  const grants: number[] = [];
  for (let i = 0; i < FRESH_WORKER_SESSIONS; i++) {
    await waitForFreeBoards(farm.client, 2);
    // Let the successor finish starting, as it would between a tuner's candidates.
    await new Promise((r) => setTimeout(r, 1500));
    const t0 = nowMs();
    const s = await farm.client.request(key);
    await s.listdir();
    grants.push(nowMs() - t0);
    await s.upload(module);
    await s.loadModule(module.name);
    starts.push(Number((await s.stats()).info.worker_start_ms));
    await s.close();
  }
  return { starts, grants };
}

export async function benchCuda(): Promise<void> {
  const skip = await cudaSkipReason();
  if (skip) {
    console.log(`\n7. CUDA board: skipped (${skip})`);
    return;
  }
  const farm = await startFarm(["cuda:0:key=gpu", "cpu:key=cpu"]);
  let run: FidelityRun | undefined;
  try {
    run = await measureFidelity(farm.client, "gpu");
    const rows: Row[] = run.rows.map((r) => {
      const checked = r.nativeUs >= FIDELITY_FLOOR_US;
      return {
        figure: `${r.workload.name} (${r.number} launches × ${REPEATS} repeats × ${ROUNDS})`,
        value: `${r.farmUs.toFixed(2)} µs`,
        target: checked ? "within 1 %" : "(< 10 µs: shown)",
        verdict: checked ? verdict(Math.abs(r.ratio - 1) <= TOLERANCE) : "",
        baseline: `native ${r.nativeUs.toFixed(2)} µs`,
        ratio: `${((r.ratio - 1) * 100).toFixed(2)} %`,
      };
    });
    for (const r of run.rows) {
      if (r.farmGraphUs === undefined) continue;
      rows.push({
        figure: `${r.workload.name}, timeEvaluator({ graph: true })`,
        value: `${r.farmGraphUs.toFixed(2)} µs`,
        target: "",
        verdict: "",
        baseline: `native ${r.nativeUs.toFixed(2)} µs`,
        ratio: `${((r.farmGraphUs / r.nativeUs - 1) * 100).toFixed(2)} %`,
      });
    }

    const copy = run.rows.reduce(
      (best, r) => (r.workload.kernel === "copy_f32" && (r.workload.bytes ?? 0) > (best?.workload.bytes ?? 0) ? r : best),
      run.rows[0],
    );
    if (copy?.workload.bytes) {
      const gbps = copy.workload.bytes / (copy.farmUs / 1e6) / 1e9;
      const ceiling = await copyCeilingGBps(run, copy.workload.bytes / 2);
      rows.push({
        figure: `copy kernel bandwidth (${copy.workload.name}, farm timing)`,
        value: `${gbps.toFixed(0)} GB/s`,
        target: "≥ 85 % of D2D copy",
        verdict: verdict(gbps / ceiling >= BANDWIDTH_TARGET),
        baseline: `cuMemcpyDtoD ${ceiling.toFixed(0)} GB/s`,
        ratio: `${((gbps / ceiling) * 100).toFixed(1)} %`,
      });
    }

    // Fresh workers: each session loads a module (taints its worker), so the next runs on the successor.
    const arch = (await farm.client.summary()).boards.find((b) => b.key === "gpu")!.labels.arch!;
    const gpu = await freshWorkerGrants(farm, "gpu", await compileWorkloads(arch));
    const cpu = await freshWorkerGrants(farm, "cpu", await compileVadd());
    const starts = gpu.starts;
    const grants = gpu.grants;
    rows.push({
      figure: "GPU worker start (Node + CUDA context + tracker), p50",
      value: `${median(starts).toFixed(0)} ms`,
      target: "",
      verdict: "",
      baseline: `p90 ${percentile(starts, 90).toFixed(0)} ms`,
      ratio: "",
    });
    rows.push({
      figure: "grant → first call on a fresh GPU worker, p50",
      value: `${median(grants).toFixed(1)} ms`,
      target: "hidden by pre-start",
      verdict: "",
      baseline: `CPU board, same: ${median(cpu.grants).toFixed(1)} ms (its worker starts in ${median(cpu.starts).toFixed(0)} ms)`,
      ratio: `${fmtRatio(median(grants) / median(starts))} of a start`,
    });

    const c = run.rows[0]!.conditions;
    printTable("7. CUDA board: timing fidelity vs a native CUDA-event harness, copy bandwidth, worker start", rows, [
      `device: ${c.name}, ${c.arch}, ${c.sm_count} SMs, driver CUDA ${c.driver_version}; clocks at the last timing: SM ${c.sm_clock_mhz} MHz, memory ${c.mem_clock_mhz} MHz (${c.clock_source})`,
      "farm: timeEvaluator(number, repeat 10) through tracker → agent → worker; native: bench/cuda/native-timer.c on the same module file, same launch.",
      `${ROUNDS} rounds alternate native and farm; medians over all ${ROUNDS * REPEATS} repeats of each side.`,
      `worker start: ${FRESH_WORKER_SESSIONS} sessions that each load a module, so each runs on a new worker the pool pre-started during the previous one.`,
    ]);
  } finally {
    await run?.dispose();
    await farm.stop();
  }
}
