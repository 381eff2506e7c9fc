/**
 * Simulated device agents for the memory benchmark, run as their own
 * process: AGENTS agents of BOARDS boards each, every one on its own gRPC
 * connection speaking the real AgentService.Attach protocol — Register with
 * its boards, a Heartbeat every heartbeat_interval_ms the tracker asks for,
 * and BoardReady for each board. Assignments are never served (nothing asks).
 *
 *   node --import tsx bench/lib/sim-agents.ts TRACKER AGENTS BOARDS
 *
 * Prints "attached N" once every agent got its Registered reply, then runs
 * until stdin closes or SIGTERM.
 */
import type * as grpc from "@grpc/grpc-js";
import { AgentService, makeClient, type AgentServiceClient } from "../../protos/index.ts";
import type { AgentMessage } from "../../protos/gen/farm/v1/AgentMessage.ts";
import type { TrackerMessage__Output } from "../../protos/gen/farm/v1/TrackerMessage.ts";

const [tracker, agentsArg, boardsArg] = process.argv.slice(2);
const agents = Number(agentsArg);
const boardsPerAgent = Number(boardsArg);
if (!tracker || !(agents > 0) || !(boardsPerAgent > 0)) {
  console.error("usage: sim-agents.ts TRACKER AGENTS BOARDS");
  process.exit(2);
}

const timers: NodeJS.Timeout[] = [];
let attached = 0;

function simulate(index: number): void {
  const client = makeClient<AgentServiceClient>(AgentService, tracker!, {});
  const call = client.Attach() as unknown as grpc.ClientDuplexStream<AgentMessage, TrackerMessage__Output>;
  const name = `sim${String(index).padStart(3, "0")}`;
  const boards = Array.from({ length: boardsPerAgent }, (_, j) => ({
    name: `cpu${j}`,
    key: "sim",
    kind: "cpu",
    // What a real CPU agent reports (device-agent/backends/cpu.ts).
    labels: { arch: "x64", os: "linux", rack: `r${index % 8}` },
    capabilities: { cores: "2", model: "AMD EPYC", memory_bytes: "25275838464" },
  }));
  call.on("data", (msg: TrackerMessage__Output) => {
    if (!msg.registered) return;
    let seq = 0;
    timers.push(setInterval(() => call.write({ heartbeat: { seq: ++seq } }), msg.registered.heartbeat_interval_ms || 500));
    for (const b of boards) call.write({ board_ready: { board_name: b.name } });
    if (++attached === agents) console.log(`attached ${attached}`);
  });
  call.on("error", (err) => {
    console.error(`${name}: ${err.message}`);
    process.exit(1);
  });
  call.write({ register: { agent_name: name, boards, version: "0.1.0" } });
}

for (let i = 0; i < agents; i++) simulate(i);

const stop = () => {
  for (const t of timers) clearInterval(t);
  process.exit(0);
};
process.on("SIGTERM", stop);
process.stdin.on("end", stop);
process.stdin.resume();
