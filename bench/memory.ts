/**
 * Benchmark 5: the tracker's memory with 1,000 attached boards (50 simulated
 * agents × 20 boards speaking the real Attach protocol, heartbeats included),
 * and a Summary call's latency with them.
 *
 * Baseline, same run: the same tracker process with no agent attached
 * (its RSS, and Summary latency with an empty farm).
 */
import { connectTracker } from "../host-sdk/index.ts";
import { startTrackerProcess } from "../tests/helpers/processes.ts";
import { SIM_AGENTS, SIM_BOARDS, SIM_BOARDS_PER_AGENT, attachSimFleet, type SimFleet } from "./lib/sim-fleet.ts";
import { cpuSeconds, rssBytes } from "./lib/procs.ts";
import { fmtMiB, fmtMs, fmtRatio, nowMs, percentile, printTable, type Row } from "./lib/stats.ts";

const BOARDS = SIM_BOARDS;
const SUMMARY_WARMUP = 20;
const SUMMARY_CALLS = 100;
const STEADY_MS = 5000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function benchMemory(): Promise<void> {
  const tracker = await startTrackerProcess();
  const pid = tracker.proc.pid!;
  const client = await connectTracker(tracker.address);
  let sim: SimFleet | undefined;
  try {
    const summaryLatency = async (opts: { key?: string } = {}) => {
      for (let i = 0; i < SUMMARY_WARMUP; i++) await client.summary(opts);
      const lat: number[] = [];
      for (let i = 0; i < SUMMARY_CALLS; i++) {
        const t0 = nowMs();
        await client.summary(opts);
        lat.push(nowMs() - t0);
      }
      return lat;
    };

    const emptyLat = await summaryLatency();
    await sleep(1000);
    const rssEmpty = rssBytes(pid);

    const t0 = nowMs();
    sim = await attachSimFleet(tracker.address, client);
    const attachMs = nowMs() - t0;

    // Steady state: heartbeats from every agent; measure the tracker's CPU meanwhile.
    const cpu0 = cpuSeconds(pid);
    await sleep(STEADY_MS);
    const heartbeatCpu = (cpuSeconds(pid) - cpu0) / (STEADY_MS / 1e3);
    const rssFull = rssBytes(pid);

    const fullLat = await summaryLatency();
    // What measure() asks for (its own key), on a farm whose 1,000 boards are of another key.
    const keyLat = await summaryLatency({ key: "cpu" });
    const summaryBytes = JSON.stringify(await client.summary()).length;
    const rssAfterSummaries = rssBytes(pid);

    const p50 = percentile(fullLat, 50);
    const emptyP50 = percentile(emptyLat, 50);
    const rows: Row[] = [
      {
        figure: `tracker RSS, ${BOARDS} boards attached`,
        value: fmtMiB(rssFull),
        target: "none stated",
        verdict: "",
        baseline: `no boards ${fmtMiB(rssEmpty)}`,
        ratio: `${fmtRatio(rssFull / rssEmpty)}; +${((rssFull - rssEmpty) / BOARDS / 1024).toFixed(1)} KiB/board`,
      },
      {
        figure: `  after ${SUMMARY_WARMUP + SUMMARY_CALLS + 1} Summary calls`,
        value: fmtMiB(rssAfterSummaries),
        target: "",
        verdict: "",
        baseline: "",
        ratio: fmtRatio(rssAfterSummaries / rssEmpty),
      },
      {
        figure: `Summary call, ${BOARDS} boards, p50`,
        value: fmtMs(p50),
        target: "none stated",
        verdict: "",
        baseline: `no boards p50 ${fmtMs(emptyP50)}`,
        ratio: fmtRatio(p50 / emptyP50),
      },
      { figure: "  p99", value: fmtMs(percentile(fullLat, 99)), target: "", verdict: "", baseline: `p99 ${fmtMs(percentile(emptyLat, 99))}`, ratio: "" },
      {
        figure: `Summary of one key (none of the ${BOARDS} boards), p50`,
        value: fmtMs(percentile(keyLat, 50)),
        target: "",
        verdict: "",
        baseline: `every key p50 ${fmtMs(p50)}`,
        ratio: fmtRatio(percentile(keyLat, 50) / p50),
      },
      {
        figure: "tracker CPU with heartbeats only",
        value: `${(heartbeatCpu * 100).toFixed(1)}% of a CPU`,
        target: "",
        verdict: "",
        baseline: "",
        ratio: "",
      },
    ];
    printTable(`5. tracker memory with ${BOARDS} boards (${SIM_AGENTS} simulated agents × ${SIM_BOARDS_PER_AGENT}, real Attach protocol)`, rows, [
      `all ${BOARDS} boards free ${(attachMs / 1e3).toFixed(1)} s after the agents started; RSS read ${STEADY_MS / 1e3} s later (VmRSS of the tracker process).`,
      `Summary reply with ${BOARDS} boards: ~${(summaryBytes / 1024).toFixed(0)} KiB as JSON; ${SUMMARY_CALLS} calls after ${SUMMARY_WARMUP} warm-ups.`,
    ]);
  } finally {
    await sim?.stop();
    client.close();
    await tracker.stop();
  }
}
