/**
 * Benchmark 16: a token-less flood against a farm with tokens (issue 27).
 * 16 connections × 5 streams of 15 MiB Summary requests without a token
 * (tests/helpers/flood.ts) for FLOOD_MS, at a tracker with one agent; meanwhile
 * a client with a token calls Summary back to back. The flood runs in a child
 * process of its own: in this one, its writes of 15 MiB bodies would delay
 * the measuring client's event loop and be counted as the tracker's latency.
 *
 * Figures: the tracker's RSS before, at its peak during (VmRSS sampled every
 * 20 ms, and VmHWM) and after the flood; the normal client's Summary latency
 * p50/p99 during the flood. Baseline, same run and same processes: the same
 * client's Summary latency without the flood. Targets: RSS ≤ +64 MiB,
 * Summary p99 ≤ 50 ms.
 */
import { once } from "node:events";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connectTracker, type TrackerClient } from "../host-sdk/index.ts";
import { TokenFile } from "../tracker/index.ts";
import { FLOOD_BODY_BYTES, FLOOD_CONNECTIONS, FLOOD_STREAMS, type FloodResult } from "../tests/helpers/flood.ts";
import { statusKiB } from "../tests/helpers/procfs.ts";
import { spawnNode, startAgentProcess, startTrackerProcess, waitFor } from "../tests/helpers/processes.ts";
import { cpuSeconds } from "./lib/procs.ts";
import { fmtMiB, fmtMs, fmtRatio, nowMs, percentile, printTable, verdict } from "./lib/stats.ts";

const FLOOD_MS = 10_000;
const QUIET_CALLS = 300;
const WARMUP = 30;
const MAX_GROWTH_BYTES = 64 << 20;
const MAX_P99_MS = 50;

const FLOOD_HELPER = new URL("../tests/helpers/flood.ts", import.meta.url).href;

/** The flood in a child process, until `untilMs`; its result, once it has exited. */
async function floodChild(address: string, untilMs: number): Promise<FloodResult> {
  const code = `const { summaryFlood } = await import(${JSON.stringify(FLOOD_HELPER)}); const r = await summaryFlood(${JSON.stringify(address)}, { rounds: Number.MAX_SAFE_INTEGER, untilMs: ${untilMs} }); console.log(JSON.stringify({ calls: r.calls, codes: [...r.codes] })); process.exit(0);`;
  const child = spawnNode(["--import", "tsx", "--input-type=module", "-e", code]);
  let out = "";
  child.stdout!.on("data", (c: Buffer) => (out += c.toString()));
  let err = "";
  child.stderr!.on("data", (c: Buffer) => (err += c.toString()));
  const [exit] = (await once(child, "exit")) as [number | null];
  if (exit !== 0) throw new Error(`the flood's process exited ${exit}: ${err}`);
  const r = JSON.parse(out) as { calls: number; codes: [string, number][] };
  return { calls: r.calls, codes: new Map(r.codes) };
}

async function summaryLatencies(client: TrackerClient, until: () => boolean, max = Infinity): Promise<number[]> {
  const lat: number[] = [];
  while (!until() && lat.length < max) {
    const t0 = nowMs();
    await client.summary();
    lat.push(nowMs() - t0);
  }
  return lat;
}

export async function benchFlood(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "kf-bench-flood-"));
  const file = new TokenFile(join(dir, "tokens.json"));
  const alice = file.create({ name: "alice", kind: "client", keys: ["cpu"] }).token;
  const box = file.create({ name: "box", kind: "agent", keys: ["cpu"] }).token;
  const tracker = await startTrackerProcess(["--tokens", join(dir, "tokens.json")]);
  const agent = await startAgentProcess(tracker.address, ["cpu:key=cpu"], ["--token", box]);
  const client = await connectTracker(tracker.address, { token: alice });
  const pid = tracker.proc.pid!;
  try {
    await waitFor("the board", async () => (await client.summary()).boards.some((b) => b.state === "free"));
    const agentBefore = (await client.summary()).agents.map((a) => `${a.id}@${a.attached_at_ms}`).join();
    await summaryLatencies(client, () => false, WARMUP);
    const quiet = await summaryLatencies(client, () => false, QUIET_CALLS);
    const rssBefore = statusKiB(pid, "VmRSS") * 1024;
    const hwmBefore = statusKiB(pid, "VmHWM") * 1024;
    const cpu0 = cpuSeconds(pid);

    let peak = rssBefore;
    const sampler = setInterval(() => (peak = Math.max(peak, statusKiB(pid, "VmRSS") * 1024)), 20);
    let flooding = true;
    const t0 = nowMs();
    const flood = floodChild(tracker.address, Date.now() + FLOOD_MS).finally(() => (flooding = false));
    const during = await summaryLatencies(client, () => !flooding);
    const result = await flood;
    const floodMs = nowMs() - t0;
    clearInterval(sampler);
    const cpu = (cpuSeconds(pid) - cpu0) / (floodMs / 1e3);
    const hwm = statusKiB(pid, "VmHWM") * 1024;
    const rssAfter = statusKiB(pid, "VmRSS") * 1024;
    const agentAfter = (await client.summary()).agents.map((a) => `${a.id}@${a.attached_at_ms}`).join();
    const peakRss = Math.max(peak, hwm > hwmBefore ? hwm : 0);

    const p50 = percentile(during, 50);
    const p99 = percentile(during, 99);
    printTable(
      `16. a token-less flood: ${FLOOD_CONNECTIONS} connections × ${FLOOD_STREAMS} streams of ${FLOOD_BODY_BYTES >> 20} MiB Summary requests for ${FLOOD_MS / 1e3} s, one agent attached`,
      [
        { figure: "tracker RSS before the flood", value: fmtMiB(rssBefore), target: "", verdict: "", baseline: "", ratio: "" },
        {
          figure: "  peak during (VmRSS every 20 ms, VmHWM)",
          value: `${fmtMiB(peakRss)} (+${fmtMiB(peakRss - rssBefore)})`,
          target: `≤ +${fmtMiB(MAX_GROWTH_BYTES)}`,
          verdict: verdict(peakRss - rssBefore <= MAX_GROWTH_BYTES),
          baseline: `before ${fmtMiB(rssBefore)}`,
          ratio: fmtRatio(peakRss / rssBefore),
        },
        { figure: "  after", value: fmtMiB(rssAfter), target: "", verdict: "", baseline: `before ${fmtMiB(rssBefore)}`, ratio: fmtRatio(rssAfter / rssBefore) },
        {
          figure: "Summary with a token during the flood, p50",
          value: fmtMs(p50),
          target: "",
          verdict: "",
          baseline: `no flood p50 ${fmtMs(percentile(quiet, 50))}`,
          ratio: fmtRatio(p50 / percentile(quiet, 50)),
        },
        {
          figure: "  p99",
          value: fmtMs(p99),
          target: `≤ ${MAX_P99_MS} ms`,
          verdict: verdict(p99 <= MAX_P99_MS),
          baseline: `no flood p99 ${fmtMs(percentile(quiet, 99))}`,
          ratio: fmtRatio(p99 / percentile(quiet, 99)),
        },
        { figure: "tracker CPU during the flood", value: `${(cpu * 100).toFixed(0)}% of a CPU`, target: "", verdict: "", baseline: "", ratio: "" },
      ],
      [
        `flood: ${result.calls} calls in ${(floodMs / 1e3).toFixed(1)} s, answered ${[...result.codes].map(([c, n]) => `${c} × ${n}`).join(", ")}; ${during.length} Summary calls with a token during it, ${quiet.length} without (after ${WARMUP} warm-ups).`,
        `the agent ${agentAfter === agentBefore ? "stayed attached (same attachment)" : `RE-ATTACHED OR LEFT (${agentBefore} → ${agentAfter})`}.`,
      ],
    );
  } finally {
    client.close();
    await agent.stop();
    await tracker.stop();
  }
}
