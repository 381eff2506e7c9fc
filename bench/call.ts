/**
 * Benchmark 4: a small call's round trip host → tracker → session worker →
 * host (a loaded `nop` with no arguments), p50 and p99.
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

export interface CallFigures {
  cpus: string;
  callP50: number;
  callP99: number;
  pingP50: number;
  pingP99: number;
  /** Ping-pong through a relay process: four socket hops per round trip, as a call has. */
  relayP50: number;
  relayP99: number;
  unaryP50: number;
  callsPerS: number;
  /** CPU time per call by process, e.g. "host 60, tracker 80, worker 50". */
  cpuPerCall: string;
}

async function measureCall(): Promise<CallFigures> {
  const [farm, module, peer] = await Promise.all([startBenchFarm(), compileVadd(), startPeer()]);
  const relay = await startPeer(peer.port);
  try {
    return await farm.withSession(async (s) => {
      await s.upload(module);
      await settle(farm);
      const nop = (await s.loadModule(module.name)).getFunction("nop");
      for (let i = 0; i < WARMUP_CALLS; i++) await nop();
      await pingPong(peer.port, WARMUP_CALLS, 0);
      await pingPong(relay.port, WARMUP_CALLS, 0);
      const calls: number[] = [];
      const pings: number[] = [];
      const relayed: number[] = [];
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
      const cpuPerCall = Object.entries(cpu)
        .filter(([, v]) => v > 0)
        .map(([k, v]) => `${k} ${((v / calls.length) * 1e6).toFixed(0)}`)
        .join(", ");
      const unary: number[] = [];
      for (let i = 0; i < UNARY_CALLS; i++) {
        const t0 = nowMs();
        await farm.client.summary();
        unary.push(nowMs() - t0);
      }
      return {
        cpus: allowedCpus(),
        callP50: percentile(calls, 50),
        callP99: percentile(calls, 99),
        pingP50: percentile(pings, 50),
        pingP99: percentile(pings, 99),
        relayP50: percentile(relayed, 50),
        relayP99: percentile(relayed, 99),
        unaryP50: percentile(unary.slice(100), 50),
        callsPerS: calls.length / (callMs / 1e3),
        cpuPerCall,
      };
    });
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
  const ratio = f.callP50 / f.pingP50;
  return [
    {
      figure: `${label}: nop call round trip p50`,
      value: fmtUs(f.callP50),
      target: `≤ ${TARGET_CALL_RATIO}× ping-pong`,
      verdict: verdict(ratio <= TARGET_CALL_RATIO),
      baseline: `ping-pong p50 ${fmtUs(f.pingP50)}; via relay ${fmtUs(f.relayP50)}`,
      ratio: `${fmtRatio(ratio)}; ${fmtRatio(f.callP50 / f.relayP50)} relay`,
    },
    {
      figure: `${label}: nop call round trip p99`,
      value: fmtUs(f.callP99),
      target: "",
      verdict: "",
      baseline: `ping-pong p99 ${fmtUs(f.pingP99)}; via relay ${fmtUs(f.relayP99)}`,
      ratio: `${fmtRatio(f.callP99 / f.pingP99)}; ${fmtRatio(f.callP99 / f.relayP99)} relay`,
    },
    {
      figure: `${label}: calls/s back to back`,
      value: `${f.callsPerS.toFixed(0)}/s`,
      target: "",
      verdict: "",
      baseline: `grpc unary p50 ${fmtUs(f.unaryP50)}`,
      ratio: `call ${fmtRatio(f.callP50 / f.unaryP50)} unary`,
    },
  ];
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
  notes.push(`CPU per call, ${pinnedHere ? "pinned" : "unpinned"}: ${here.cpuPerCall} µs`);
  if (!pinnedHere) {
    if (hasTaskset()) {
      const pinned = await measurePinned();
      all.push(...rows("pinned (CPU 0)", pinned));
      notes.push(`CPU per call, pinned: ${pinned.cpuPerCall} µs`);
    } else {
      notes.push("pinned run skipped: taskset (util-linux) is not installed.");
    }
  }
  printTable("4. small call round trip host → tracker → worker → host (nop, no arguments)", all, notes);
}
