/**
 * Simulated device agents (bench/lib/sim-agent.ts) run as their own process:
 * AGENTS agents of BOARDS boards each, every one on its own gRPC connection
 * speaking the real AgentService.Attach protocol — Register with its boards,
 * a Heartbeat every heartbeat_interval_ms the tracker asks for, BoardReady for
 * each free board — and serving the grant and release of the sessions the
 * tracker assigns (on the agent's direct-lane port, or the tracker's relay).
 *
 *   node --import tsx bench/lib/sim-agents.ts TRACKER AGENTS BOARDS [--first N] [--key K]
 *
 * Agents are named sim000, sim001, … from index N (default 0), so several
 * processes can share one farm; their boards are cpu0, cpu1, … of key K
 * (default "sim"). Prints "attached N" once every agent got its Registered
 * reply, then runs until stdin closes or SIGTERM, and then prints
 * "stats JSON" (the sum of every agent's SimAgentStats, and how late its
 * event loop ran: `loopDelay`) and exits. An agent
 * that loses the tracker ends the process with code 1.
 */
import { monitorEventLoopDelay } from "node:perf_hooks";
import { BOARD_KIND } from "../../protos/index.ts";
import { SimAgent, type SimAgentStats } from "./sim-agent.ts";

const args = process.argv.slice(2);
const flag = (name: string, fallback: string) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? args.splice(i, 2)[1]! : fallback;
};
const first = Number(flag("--first", "0"));
const key = flag("--key", "sim");
const [tracker, agentsArg, boardsArg] = args;
const agents = Number(agentsArg);
const boardsPerAgent = Number(boardsArg);
if (!tracker || !(agents > 0) || !(boardsPerAgent > 0) || !(first >= 0)) {
  console.error("usage: sim-agents.ts TRACKER AGENTS BOARDS [--first N] [--key K]");
  process.exit(2);
}

// How late this process's event loop ran (a starved load generator shows here, not in the tracker).
const loop = monitorEventLoopDelay({ resolution: 10 });
loop.enable();
const fleet: SimAgent[] = [];
for (let i = first; i < first + agents; i++) {
  const name = `sim${String(i).padStart(3, "0")}`;
  const boards = Array.from({ length: boardsPerAgent }, (_, j) => ({
    name: `cpu${j}`,
    key,
    kind: BOARD_KIND.toWire("cpu"),
    // What a real CPU agent reports (device-agent/backends/cpu.ts).
    labels: { arch: "x64", os: "linux", rack: `r${i % 8}` },
    capabilities: { cores: "2", model: "AMD EPYC", memory_bytes: "25275838464" },
  }));
  fleet.push(
    new SimAgent({
      tracker,
      name,
      boards,
      onLost: (why) => {
        console.error(
          `${new Date().toISOString()} ${name}: ${why} (this process's event loop: p99 ${(loop.percentile(99) / 1e6).toFixed(0)} ms, max ${(loop.max / 1e6).toFixed(0)} ms late)`,
        );
        process.exit(1);
      },
    }),
  );
}

try {
  await Promise.all(fleet.map((a) => a.start()));
} catch (err) {
  console.error((err as Error).message);
  process.exit(1);
}
console.log(`attached ${fleet.length}`);

function total(): SimAgentStats {
  const sum: SimAgentStats = {
    assigned: 0,
    direct: 0,
    relay: 0,
    closed: 0,
    released: 0,
    hostLeft: 0,
    endedByTracker: {},
    otherRequests: 0,
    doubleAssigned: 0,
    heartbeatRttMs: [],
  };
  for (const { stats } of fleet) {
    for (const k of ["assigned", "direct", "relay", "closed", "released", "hostLeft", "otherRequests", "doubleAssigned"] as const) sum[k] += stats[k];
    for (const [code, n] of Object.entries(stats.endedByTracker)) sum.endedByTracker[code] = (sum.endedByTracker[code] ?? 0) + n;
    for (const v of stats.heartbeatRttMs) sum.heartbeatRttMs.push(Math.round(v * 100) / 100);
  }
  return sum;
}

let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  for (const a of fleet) a.close();
  const loopDelay = { p99Ms: loop.percentile(99) / 1e6, maxMs: loop.max / 1e6 };
  process.stdout.write(`stats ${JSON.stringify({ ...total(), loopDelay })}\n`, () => process.exit(0));
};
process.on("SIGTERM", stop);
process.stdin.on("end", stop);
process.stdin.resume();
