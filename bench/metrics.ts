/**
 * Benchmark: the tracker's `/metrics` scrape with 1,000 attached boards
 * (50 simulated agents × 20 boards on the real Attach protocol, as in the
 * memory benchmark), latency p50/p99 and size.
 *
 * Baseline, same run and same farm: the Summary RPC, which reads the same
 * registry (every board, every queue) and serializes it — what `kfarm status`
 * does. Both are also measured with no board attached. Scrapes and Summary
 * calls alternate in rounds so drift hits both alike.
 */
import { Agent, get } from "node:http";
import { connectTracker, type TrackerClient } from "../host-sdk/index.ts";
import { startTrackerProcess } from "../tests/helpers/processes.ts";
import { SIM_AGENTS, SIM_BOARDS, SIM_BOARDS_PER_AGENT, attachSimFleet, type SimFleet } from "./lib/sim-fleet.ts";
import { parseExposition } from "../tests/helpers/metrics.ts";
import { fmtMs, fmtRatio, nowMs, percentile, printTable, type Row } from "./lib/stats.ts";

const BOARDS = SIM_BOARDS;
const WARMUP = 20;
const ROUNDS = 5;
const PER_ROUND = 40;

/** GET over one kept-alive connection (as Prometheus scrapes); resolves with the body. */
function scrape(agent: Agent, address: string): Promise<string> {
  return new Promise((resolve, reject) => {
    get(`http://${address}/metrics`, { agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => (res.statusCode === 200 ? resolve(Buffer.concat(chunks).toString()) : reject(new Error(`/metrics: HTTP ${res.statusCode}`))));
      res.on("error", reject);
    }).on("error", reject);
  });
}

async function measure(agent: Agent, address: string, client: TrackerClient): Promise<{ scrape: number[]; summary: number[] }> {
  for (let i = 0; i < WARMUP; i++) {
    await scrape(agent, address);
    await client.summary();
  }
  const out = { scrape: [] as number[], summary: [] as number[] };
  for (let r = 0; r < ROUNDS; r++) {
    for (let i = 0; i < PER_ROUND; i++) {
      const t0 = nowMs();
      await scrape(agent, address);
      out.scrape.push(nowMs() - t0);
    }
    for (let i = 0; i < PER_ROUND; i++) {
      const t0 = nowMs();
      await client.summary();
      out.summary.push(nowMs() - t0);
    }
  }
  return out;
}

export async function benchMetrics(): Promise<void> {
  const tracker = await startTrackerProcess(["--metrics-port", "0"]);
  const http = tracker.httpAddress!;
  const client = await connectTracker(tracker.address);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  let sim: SimFleet | undefined;
  try {
    const empty = await measure(agent, http, client);
    const emptyBytes = Buffer.byteLength(await scrape(agent, http));

    sim = await attachSimFleet(tracker.address, client);

    const full = await measure(agent, http, client);
    const body = await scrape(agent, http);
    const samples = parseExposition(body);
    const ours = samples.filter((s) => s.name.startsWith("kernelfarm_") && !s.name.startsWith("kernelfarm_tracker_"));
    const free = ours.find((s) => s.name === "kernelfarm_boards" && s.labels.state === "free")?.value;
    if (free !== BOARDS) throw new Error(`the scrape says ${free} free boards, expected ${BOARDS}`);
    const summaryBytes = JSON.stringify(await client.summary()).length;

    const p = (xs: number[], q: number) => percentile(xs, q);
    const rows: Row[] = [
      {
        figure: `/metrics scrape, ${BOARDS} boards, p50`,
        value: fmtMs(p(full.scrape, 50)),
        target: "none stated",
        verdict: "",
        baseline: `Summary RPC p50 ${fmtMs(p(full.summary, 50))}`,
        ratio: fmtRatio(p(full.scrape, 50) / p(full.summary, 50)),
      },
      {
        figure: "  p99",
        value: fmtMs(p(full.scrape, 99)),
        target: "",
        verdict: "",
        baseline: `Summary RPC p99 ${fmtMs(p(full.summary, 99))}`,
        ratio: fmtRatio(p(full.scrape, 99) / p(full.summary, 99)),
      },
      {
        figure: "/metrics scrape, no boards, p50",
        value: fmtMs(p(empty.scrape, 50)),
        target: "",
        verdict: "",
        baseline: `Summary RPC p50 ${fmtMs(p(empty.summary, 50))}`,
        ratio: fmtRatio(p(empty.scrape, 50) / p(empty.summary, 50)),
      },
      { figure: "  p99", value: fmtMs(p(empty.scrape, 99)), target: "", verdict: "", baseline: `Summary RPC p99 ${fmtMs(p(empty.summary, 99))}`, ratio: "" },
      {
        figure: `scrape size, ${BOARDS} boards`,
        value: `${(Buffer.byteLength(body) / 1024).toFixed(0)} KiB, ${samples.length} samples`,
        target: "",
        verdict: "",
        baseline: `no boards ${(emptyBytes / 1024).toFixed(0)} KiB; Summary ~${(summaryBytes / 1024).toFixed(0)} KiB as JSON`,
        ratio: "",
      },
    ];
    printTable(
      `metrics: tracker /metrics scrape with ${BOARDS} boards (${SIM_AGENTS} simulated agents × ${SIM_BOARDS_PER_AGENT}, real Attach protocol)`,
      rows,
      [
        `${ROUNDS} rounds of ${PER_ROUND} scrapes then ${PER_ROUND} Summary calls, after ${WARMUP} warm-ups of each; one kept-alive HTTP connection, one gRPC channel.`,
        `${ours.length} kernelfarm_* samples (board gauges: info + ${ours.filter((s) => s.name === "kernelfarm_board_state").length / BOARDS} states per board); the rest are Node process metrics.`,
      ],
    );
  } finally {
    agent.destroy();
    await sim?.stop();
    client.close();
    await tracker.stop();
  }
}
