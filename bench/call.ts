/**
 * Benchmark 4: a small call's round trip host → session worker → host (a
 * loaded `nop` with no arguments), p50 and p99, on each lane: direct (host ⇄
 * worker), relay (through the tracker's data port), grpc (through the
 * tracker's gRPC relay).
 *
 * Baseline, same run: a 16-byte ping-pong over a plain Node `net` socket
 * between this process and a peer process (the target's yardstick), and the
 * same through a relay process (the call's four hops with nothing but
 * sockets in the way); measured in blocks alternating with the call's blocks
 * so all see the same machine. Run twice: as the
 * scheduler places the processes, and with every process pinned to CPU 0
 * (`taskset -c 0`, inherited by the tracker, agent, workers and peer).
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { LANES, type Lane } from "../protos/index.ts";
import { compileVadd } from "../tests/helpers/kernels.ts";
import { pingPong, startPeer } from "./lib/baselines.ts";
import { startCpuMeter } from "./lib/cpu.ts";
import { settle, startBenchFarm } from "./lib/farm.ts";
import { allowedCpus, hasTaskset } from "./lib/procs.ts";
import { fmtRatio, fmtUs, nowMs, percentile, printTable, verdict, type Row } from "./lib/stats.ts";

const BLOCKS = 4;
const BLOCK_CALLS = 1500;
const WARMUP_CALLS = 1500;
const UNARY_CALLS = 500;
export const TARGET_CALL_RATIO = 4;

export interface LaneCall {
  callP50: number;
  callP99: number;
  callsPerS: number;
  /** CPU time per call by process, e.g. "host 60, tracker 80, worker 50". */
  cpuPerCall: string;
}

export interface CallFigures {
  cpus: string;
  lanes: Record<Lane, LaneCall>;
  pingP50: number;
  pingP99: number;
  /** Ping-pong through a relay process: four socket hops per round trip, as a relayed call has. */
  relayP50: number;
  relayP99: number;
  unaryP50: number;
}

/** The call's targets per lane: direct against the raw ping-pong, relay against the raw two-hop relay, grpc the spine's. */
const TARGETS: Record<Lane, { ratio: number; against: "ping" | "relay" }> = {
  direct: { ratio: 1.5, against: "ping" },
  relay: { ratio: 1.3, against: "relay" },
  grpc: { ratio: TARGET_CALL_RATIO, against: "ping" },
};

async function measureCall(): Promise<CallFigures> {
  const [farm, module, peer] = await Promise.all([startBenchFarm(), compileVadd(), startPeer()]);
  const relay = await startPeer(peer.port);
  const pings: number[] = [];
  const relayed: number[] = [];
  const unary: number[] = [];
  const lanes = {} as Record<Lane, LaneCall>;
  try {
    await pingPong(peer.port, WARMUP_CALLS, 0);
    await pingPong(relay.port, WARMUP_CALLS, 0);
    for (const lane of LANES) {
      lanes[lane] = await farm.withSession(async (s) => {
        await s.upload(module);
        const nop = (await s.loadModule(module.name)).getFunction("nop");
        // The load tainted the worker: its successor boots now, and must be done before anything is timed.
        await settle(farm);
        for (let i = 0; i < WARMUP_CALLS; i++) await nop();
        const calls: number[] = [];
        let callMs = 0;
        const meter = startCpuMeter(farm);
        let pingCpu = 0;
        for (let b = 0; b < BLOCKS; b++) {
          const p0 = meter.used().host!;
          pings.push(...(await pingPong(peer.port, 50, BLOCK_CALLS)));
          relayed.push(...(await pingPong(relay.port, 50, BLOCK_CALLS)));
          pingCpu += meter.used().host! - p0;
          const b0 = nowMs();
          for (let i = 0; i < BLOCK_CALLS; i++) {
            const t0 = nowMs();
            await nop();
            calls.push(nowMs() - t0);
          }
          callMs += nowMs() - b0;
        }
        // The host's share excludes its ping-pong blocks.
        const cpu = meter.used();
        cpu.host! -= pingCpu;
        return {
          callP50: percentile(calls, 50),
          callP99: percentile(calls, 99),
          callsPerS: calls.length / (callMs / 1e3),
          cpuPerCall: Object.entries(cpu)
            .filter(([, v]) => v > 0)
            .map(([k, v]) => `${k} ${((v / calls.length) * 1e6).toFixed(0)}`)
            .join(", "),
        };
      }, lane);
      await farm.waitFree();
    }
    for (let i = 0; i < UNARY_CALLS; i++) {
      const t0 = nowMs();
      await farm.client.summary();
      unary.push(nowMs() - t0);
    }
    return {
      cpus: allowedCpus(),
      lanes,
      pingP50: percentile(pings, 50),
      pingP99: percentile(pings, 99),
      relayP50: percentile(relayed, 50),
      relayP99: percentile(relayed, 99),
      unaryP50: percentile(unary.slice(100), 50),
    };
  } finally {
    await relay.stop();
    await peer.stop();
    await farm.stop();
  }
}

/** Entry of the pinned child (`run.ts --call-child`): one measurement as a JSON line. */
export async function callChildMain(): Promise<void> {
  // The parent holds our stdin: if it goes away, stop (the exit hook stops the farm).
  process.stdin.on("end", () => process.exit(1)).resume();
  console.log(`RESULT ${JSON.stringify(await measureCall())}`);
}

function measurePinned(): Promise<CallFigures> {
  const run = fileURLToPath(new URL("./run.ts", import.meta.url));
  const child = spawn("taskset", ["-c", "0", process.execPath, ...process.execArgv, run, "--call-child"], { stdio: ["pipe", "pipe", "inherit"] });
  let out = "";
  child.stdout.on("data", (c: Buffer) => (out += c.toString()));
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("exit", (code) => {
      const line = out.split("\n").find((l) => l.startsWith("RESULT "));
      if (code === 0 && line) resolve(JSON.parse(line.slice(7)) as CallFigures);
      else reject(new Error(`pinned call benchmark exited with code ${code}:\n${out}`));
    });
  });
}

function rows(label: string, f: CallFigures): Row[] {
  return LANES.flatMap((lane) => {
    const c = f.lanes[lane];
    const t = TARGETS[lane];
    const base = t.against === "ping" ? f.pingP50 : f.relayP50;
    const ratio = c.callP50 / base;
    return [
      {
        figure: `${label}: nop call p50, ${lane} lane`,
        value: fmtUs(c.callP50),
        target: `≤ ${t.ratio}× ${t.against === "ping" ? "ping-pong" : "raw relay"}`,
        verdict: verdict(ratio <= t.ratio),
        baseline: `ping-pong p50 ${fmtUs(f.pingP50)}; via relay ${fmtUs(f.relayP50)}`,
        ratio: `${fmtRatio(c.callP50 / f.pingP50)} ping-pong; ${fmtRatio(c.callP50 / f.relayP50)} relay`,
      },
      {
        figure: `${label}: nop call p99, ${lane} lane`,
        value: fmtUs(c.callP99),
        target: "",
        verdict: "",
        baseline: `ping-pong p99 ${fmtUs(f.pingP99)}; via relay ${fmtUs(f.relayP99)}`,
        ratio: `${fmtRatio(c.callP99 / f.pingP99)}; ${fmtRatio(c.callP99 / f.relayP99)} relay`,
      },
      {
        figure: `${label}: calls/s back to back, ${lane} lane`,
        value: `${c.callsPerS.toFixed(0)}/s`,
        target: "",
        verdict: "",
        baseline: `grpc unary p50 ${fmtUs(f.unaryP50)}`,
        ratio: `call ${fmtRatio(c.callP50 / f.unaryP50)} unary`,
      },
    ];
  });
}

function cpuNotes(label: string, f: CallFigures): string[] {
  return LANES.map((lane) => `CPU per call, ${label}, ${lane}: ${f.lanes[lane].cpuPerCall} µs`);
}

export async function benchCall(): Promise<void> {
  const here = await measureCall();
  const pinnedHere = here.cpus === "0";
  const all = pinnedHere ? rows("pinned (CPU 0)", here) : rows(`unpinned (CPUs ${here.cpus})`, here);
  const notes = [
    `${BLOCKS}×${BLOCK_CALLS} calls after ${WARMUP_CALLS} warm-ups, in blocks alternating with ${BLOCKS}×${BLOCK_CALLS} ping-pongs (16 B, TCP_NODELAY),`,
    "direct (this process ↔ echo process) and via a relay process that pipes bytes on (four socket hops per round trip, as a call has).",
    "TVM RPC small call: 17–18 µs pinned (its ping-pong 14.7 µs), 60–100 µs unpinned (ping-pong 62–97 µs).",
  ];
  notes.push(...cpuNotes(pinnedHere ? "pinned" : "unpinned", here));
  if (!pinnedHere) {
    if (hasTaskset()) {
      const pinned = await measurePinned();
      all.push(...rows("pinned (CPU 0)", pinned));
      notes.push(...cpuNotes("pinned", pinned));
    } else {
      notes.push("pinned run skipped: taskset (util-linux) is not installed.");
    }
  }
  printTable("4. small call round trip host → worker → host on each lane (nop, no arguments)", all, notes);
}
