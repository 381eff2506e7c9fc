/**
 * The farm a benchmark runs against: `kfarm tracker` and `kfarm agent` as
 * real child processes on loopback (the deployment's shape), started with
 * the test harness's launcher; the host side runs in the benchmark process.
 */
import { startFarm, waitFor } from "../../tests/helpers/processes.ts";
import type { CompiledModule, Session } from "../../host-sdk/index.ts";
import type { Route } from "../../protos/index.ts";
import { childrenOf, settleProcesses } from "./procs.ts";
import { nowMs } from "./stats.ts";

export type BenchFarm = Awaited<ReturnType<typeof startFarm>> & {
  readonly trackerPid: number;
  readonly agentPid: number;
  /** Session worker processes the agent runs now. */
  workerPids(): number[];
  /** Waits until `n` boards are free again (outside any timed region). */
  waitFree(n?: number): Promise<void>;
  /** A session (on `route`, default auto) with `fn` run on it, closed afterwards whatever happens. */
  withSession<T>(fn: (s: Session) => Promise<T>, route?: Route): Promise<T>;
};

/** One CPU board of key "cpu". */
const BOARDS = ["cpu:key=cpu"];

export async function startBenchFarm(): Promise<BenchFarm> {
  const farm = await startFarm(BOARDS);
  const trackerPid = farm.tracker.proc.pid!;
  const agentPid = farm.agent.proc.pid!;
  return Object.assign(farm, {
    trackerPid,
    agentPid,
    workerPids: () => childrenOf(agentPid),
    async waitFree(n = BOARDS.length) {
      await waitFor(
        `${n} free board(s)`,
        async () => {
          const s = await farm.client.summary();
          return s.boards.filter((b) => b.state === "free").length >= n;
        },
        30_000,
        2,
      );
    },
    async withSession<T>(fn: (s: Session) => Promise<T>, route?: Route): Promise<T> {
      const s = await farm.client.request("cpu", route ? { route } : {});
      if (route && route !== "auto" && s.lane !== route) throw new Error(`asked for the ${route} lane, got ${s.lane}`);
      try {
        return await fn(s);
      } finally {
        await s.close();
      }
    },
  });
}

/**
 * Waits until the agent's processes are quiet (a spare worker the pool
 * started at the grant has finished booting), so its start-up CPU does not
 * land in a measurement. Gives up after `timeoutMs`.
 */
export function settle(farm: BenchFarm, timeoutMs = 8000): Promise<void> {
  return settleProcesses(() => [farm.agentPid, ...farm.workerPids()], timeoutMs);
}

/** Uploads and loads `module` in `s`, calls its `nop` `warmup` times, then `calls` times more, each round trip (ms) pushed to `into`. */
export async function timeNopCalls(s: Session, module: CompiledModule, warmup: number, calls: number, into: number[]): Promise<void> {
  await s.upload(module);
  const nop = (await s.loadModule(module.name)).getFunction("nop");
  for (let i = 0; i < warmup; i++) await nop();
  for (let i = 0; i < calls; i++) {
    const t = nowMs();
    await nop();
    into.push(nowMs() - t);
  }
}
