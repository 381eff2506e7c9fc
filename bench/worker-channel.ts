/**
 * Benchmark: what the agent ↔ worker channel of our own (worker.proto, fds
 * 3-5, SCM_RIGHTS; issue 27) costs against Node's IPC channel it replaced.
 * Two farms side by side on this tree's tracker: one agent from this tree,
 * one from a checkout of the baseline commit (KFARM_BASELINE_TREE: a git
 * worktree of b157f84 with node_modules), measured in interleaved rounds so
 * a drift of the machine lands on both alike (each goes first in every other
 * round):
 *
 * - the small call round trip (a loaded `nop`), p50 over CALLS calls;
 * - an idle grant → first call (listdir), p50 (the assignment and the lane's
 *   hand-over travel on the channel);
 * - a grant on the agent's data port (no standby lane: the lane is a socket the
 *   agent passes to the worker), p50.
 *
 *   git worktree add --detach ../kfarm-b157f84 b157f84 && ln -s "$PWD/node_modules" ../kfarm-b157f84/
 *   KFARM_BASELINE_TREE=../kfarm-b157f84 npm run bench -- worker-channel
 */
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { connectTracker, type CompiledModule, type TrackerClient } from "../host-sdk/index.ts";
import { compileVadd } from "../tests/helpers/kernels.ts";
import { startAgentProcess, startTrackerProcess, waitFor, type AgentProcess, type TrackerProcess } from "../tests/helpers/processes.ts";
import { timeNopCalls } from "./lib/farm.ts";
import { fmtMs, fmtRatio, fmtUs, nowMs, percentile, printTable, type Row } from "./lib/stats.ts";

const ROUNDS = 8;
const CALLS = 2000;
const CALL_WARMUP = 300;
const GRANTS = 20;

interface Farm {
  readonly label: string;
  tracker: TrackerProcess;
  agent: AgentProcess;
  client: TrackerClient;
  call: number[];
  grant: number[];
  agentPortGrant: number[];
}

async function startFarm(label: string, cli: string | undefined): Promise<Farm> {
  const tracker = await startTrackerProcess();
  const agent = await startAgentProcess(tracker.address, ["cpu:key=cpu"], ["--canary-interval-ms", "0"], cli ? { cli } : {});
  const client = await connectTracker(tracker.address);
  await waitFree({ label, client } as Farm);
  return { label, tracker, agent, client, call: [], grant: [], agentPortGrant: [] };
}

async function waitFree(f: Farm): Promise<void> {
  await waitFor(`${f.label}: a free board`, async () => (await f.client.summary()).boards.some((b) => b.state === "free"), 30_000, 2);
}

async function grants(f: Farm, into: number[], route: "direct" | "relay"): Promise<void> {
  for (let i = 0; i < GRANTS; i++) {
    await waitFree(f);
    const t0 = nowMs();
    const s = await f.client.request("cpu", { route });
    await s.listdir();
    into.push(nowMs() - t0);
    await s.close();
  }
}

async function round(f: Farm, module: CompiledModule): Promise<void> {
  await grants(f, f.grant, "direct");
  // Relay: the worker's lane is a socket the agent dials and passes to it (the data port hand-over of the direct lane's fallback alike).
  await grants(f, f.agentPortGrant, "relay");
  await waitFree(f);
  const s = await f.client.request("cpu");
  try {
    await timeNopCalls(s, module, CALL_WARMUP, CALLS, f.call);
  } finally {
    await s.close();
  }
}

export async function benchWorkerChannel(): Promise<void> {
  const tree = process.env.KFARM_BASELINE_TREE ? resolve(process.env.KFARM_BASELINE_TREE) : undefined;
  const baselineCli = tree && join(tree, "cli/main.ts");
  if (!baselineCli || !existsSync(baselineCli)) {
    console.log("worker-channel: skipped: set KFARM_BASELINE_TREE to a checkout of the baseline commit (see bench/worker-channel.ts)");
    return;
  }
  const module = await compileVadd();
  const farms = [await startFarm("baseline (Node IPC)", baselineCli), await startFarm("worker.proto channel", undefined)];
  try {
    // Each farm goes first in every other round: whatever the first of a pair pays (caches, the scheduler) lands on both alike.
    for (let r = 0; r < ROUNDS; r++) for (const f of r % 2 ? [...farms].reverse() : farms) await round(f, module);
  } finally {
    for (const f of farms) {
      f.client.close();
      await f.agent.stop();
      await f.tracker.stop();
    }
  }
  const [base, now] = farms as [Farm, Farm];
  const p50 = (xs: number[]) => percentile(xs, 50);
  const row = (figure: string, f: (x: Farm) => number[], fmt: (n: number) => string): Row => ({
    figure,
    value: fmt(p50(f(now))),
    target: "≤ 1.05×",
    baseline: `${base.label} ${fmt(p50(f(base)))}`,
    ratio: fmtRatio(p50(f(now)) / p50(f(base))),
    verdict: p50(f(now)) / p50(f(base)) <= 1.05 ? "met" : "missed",
  });
  printTable(
    "worker-channel: the agent ↔ worker channel of our own vs Node's IPC (two agents side by side, interleaved rounds)",
    [
      row("nop call round trip p50", (x) => x.call, fmtUs),
      row("idle grant → first call p50 (direct, standby lane)", (x) => x.grant, fmtMs),
      row("grant → first call p50 (relay: a socket passed to the worker)", (x) => x.agentPortGrant, fmtMs),
    ],
    [
      `${ROUNDS} rounds; per round and farm: ${GRANTS} direct grants, ${GRANTS} relay grants, ${CALLS} nop calls after ${CALL_WARMUP} warm-up`,
      `baseline agent: ${tree}`,
    ],
  );
}
