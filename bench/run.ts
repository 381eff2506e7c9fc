/**
 * kernelfarm benchmarks: `npm run bench` runs them all, `npm run bench -- NAME…`
 * the named ones. Each prints its figures with the target, a physical baseline
 * measured in the same run, and the ratio. See BENCHMARKS.md.
 *
 *   npm run bench -- --pin NAME   run under `taskset -c 0` (every process on CPU 0)
 *   npm run bench -- --list       names and what each measures
 *   npm run bench -- farm-scale --agents 10 --boards 10 --hosts 50   a benchmark's own flags (bench/farm-scale.ts)
 *   npm run bench -- vta-sim --processes 5                          (bench/vta-sim.ts)
 */
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { benchArray } from "./array.ts";
import { benchCall, callChildMain } from "./call.ts";
import { benchCuda } from "./cuda.ts";
import { FARM_SCALE_VALUE_FLAGS } from "./farm-scale.ts";
import { benchGrant } from "./grant.ts";
import { benchLiveView } from "./live-view.ts";
import { benchMemory } from "./memory.ts";
import { benchMetrics } from "./metrics.ts";
import { allowedCpus, hasTaskset, loadAverage, machineBusy, stealMeter } from "./lib/procs.ts";
import { benchUpload } from "./upload.ts";
import { benchVtaSim, VTA_SIM_VALUE_FLAGS } from "./vta-sim.ts";

process.env.KFARM_LOG ??= "error";
process.env.KFARM_TEST_LOG ??= process.env.KFARM_LOG;
// Exit through process.exit so the launcher's exit hook kills the farm processes.
for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => process.exit(130));

const BENCHMARKS: Record<string, { what: string; run: () => Promise<void> }> = {
  grant: { what: "session grant → first call p50; sessions/s on one board", run: benchGrant },
  upload: { what: "64 MiB upload and download through the tracker relay vs raw Node net", run: benchUpload },
  array: { what: "64 MiB float32 array host → board and board → host", run: benchArray },
  call: { what: "small call round trip p50/p99 vs raw socket ping-pong, unpinned and pinned", run: benchCall },
  memory: { what: "tracker RSS and Summary latency with 1,000 attached boards", run: benchMemory },
  "live-view": { what: "tracker CPU per session with 10 open live-view feed clients vs none, sessions back to back", run: benchLiveView },
  metrics: { what: "tracker /metrics scrape p50/p99 with 1,000 attached boards vs the Summary RPC", run: benchMetrics },
  cuda: { what: "CUDA board on a real GPU: timing fidelity vs a native event harness, copy bandwidth, worker start (skipped without a GPU)", run: benchCuda },
  "vta-sim": {
    what: "VTA simulator: simulated int8 MAC/s on the conv2d tutorial vs a typed-array dot loop; cycles 1 vs 2 virtual threads; the spread between fresh processes and fresh farms (--processes N)",
    run: () => benchVtaSim(args),
  },
  "vta-mmio": {
    what: "VTA mmio driver on the register-level device model: overhead per run (flush, relocation, registers, done poll) for the tutorials vs a call on the simulator board",
    run: async () => (await import("./vta-mmio.ts")).benchVtaMmio(),
  },
  "worker-channel": {
    what: "the agent ↔ worker channel (worker.proto, SCM_RIGHTS) vs Node's IPC of a baseline checkout (KFARM_BASELINE_TREE): nop call, idle grant, relay grant",
    run: async () => (await import("./worker-channel.ts")).benchWorkerChannel(),
  },
  trust: {
    what: "the cost of the worker forwarder, tokens and TLS: nop call, idle grant, 64 MiB upload on four farms side by side; authorization per grant",
    run: async () => (await import("./trust.ts")).benchTrust(),
  },
  "across-hosts": {
    what: "tracker, agents and a client on hosts of their own (network namespaces): grant, call and 64 MiB upload per lane at 0 ms, 20 ms and 1 % loss vs raw TCP over the same links (needs root)",
    run: async () => (await import("./across-hosts.ts")).benchAcrossHosts(),
  },
  "tune-hosts": {
    what: "the VTA tuner (examples/tune-vta-conv2d.ts) on a client host against vta-sim boards on two agent hosts of the multi-host bed: 1 board vs 8, candidates/s, speedup, busy, idle by cause, the tuner's CPU (needs root; KFARM_IP: a packed ip)",
    run: async () => (await import("./tune-hosts.ts")).benchTuneHosts(),
  },
  "tvm-tracker": {
    what: "TVM's tracker protocol on the tracker's TVM port, the tracker's own work: REQUEST → grant p50/p90 for a TCP_NODELAY protocol client (not TVM's), a free TVM server waiting, vs a raw TCP ping-pong of the same frames (TVM's own client: tvm-stock)",
    run: async () => (await import("./tvm-tracker.ts")).benchTvmTracker(),
  },
  "tvm-stock": {
    what: "TVM's tracker protocol with TVM's own client and rpc_servers, TVM's tracker vs kernelfarm's TVM port in alternating rounds: request → usable session p50/p90 (kept and fresh tracker connection, stock and TCP_NODELAY client), sessions/s with 1 and 4 servers (skipped without TVM)",
    run: async () => (await import("./tvm-stock.ts")).benchTvmStock(),
  },
  measure: {
    what: "measure(): overhead per candidate beyond board time (cpu, vta-sim), candidates/s on 1/4/16 vta-sim boards, vs one session per candidate",
    run: async () => (await import("./measure.ts")).benchMeasure(),
  },
  python: {
    what: "the Python SDK vs the TypeScript SDK on the same farm and lane: nop call p50/p99 and 64 MiB upload, direct, relay and grpc",
    run: async () => (await import("./python.ts")).benchPython(),
  },
  "tune-scaling": {
    what: "tuning at farm scale on a GPU host: the seed-004 conv2d layer on 1, 2 and 4 boards, cold caches — candidates/s, speedup, busy fraction, idle by cause (skipped without a GPU)",
    run: async () => (await import("./tune-farm.ts")).benchTuneScaling(),
  },
  "tune-model": {
    what: "the cost model against random-then-mutation search on a GPU host: candidates to within 2 % of the old search's best, 3 seeds, conv2d 7×7×512 and SGEMM 4096 (skipped without a GPU)",
    run: async () => (await import("./tune-farm.ts")).benchTuneModel(),
  },
  flood: {
    what: "a token-less flood of 15 MiB Summary requests (16 connections × 5 streams): tracker RSS before/during/after, a token holder's Summary p50/p99 during it vs without",
    run: async () => (await import("./flood.ts")).benchFlood(),
  },
  "farm-scale": {
    what: "a farm of 10,000 simulated boards (100 agents × 100) and 1,000 hosts looping request → close: grant p50/p99, tracker CPU per grant, RSS peak, Summary under load vs a 1 × 10 farm (--agents, --boards, --hosts, --duration-s, --hold-ms …)",
    run: async () => (await import("./farm-scale.ts")).benchFarmScale(args),
  },
};

const args = process.argv.slice(2);

if (args[0] === "--call-child") {
  await callChildMain();
  process.exit(0);
}

if (args.includes("--list")) {
  for (const [name, b] of Object.entries(BENCHMARKS)) console.log(`${name.padEnd(8)} ${b.what}`);
  process.exit(0);
}

if (args.includes("--pin") && allowedCpus() !== "0") {
  if (!hasTaskset()) {
    console.error("bench: --pin needs taskset (util-linux)");
    process.exit(1);
  }
  const self = fileURLToPath(import.meta.url);
  const r = spawnSync("taskset", ["-c", "0", process.execPath, ...process.execArgv, self, ...args], { stdio: "inherit" });
  process.exit(r.status ?? 1);
}

// A benchmark's flags that take a value (`--agents 10`): the value is no benchmark name.
const VALUE_FLAGS = new Set<string>([...FARM_SCALE_VALUE_FLAGS, ...VTA_SIM_VALUE_FLAGS]);
const names = args.filter((a, i) => !a.startsWith("--") && !(i > 0 && VALUE_FLAGS.has(args[i - 1]!)));
const unknown = names.filter((n) => !(n in BENCHMARKS));
if (unknown.length > 0) {
  console.error(`bench: unknown benchmark ${unknown.join(", ")}; known: ${Object.keys(BENCHMARKS).join(", ")}`);
  process.exit(2);
}
const selected = names.length > 0 ? names : Object.keys(BENCHMARKS);

/** The commit measured, and whether files outside bench/ differ from it. */
function revision(): string {
  try {
    const head = execFileSync("git", ["rev-parse", "--short", "HEAD"], { stdio: ["ignore", "pipe", "ignore"] })
      .toString()
      .trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--untracked-files=no"], { stdio: ["ignore", "pipe", "ignore"] })
      .toString()
      .split("\n")
      .filter((l) => l.trim() && !l.slice(3).startsWith("bench/"));
    return dirty.length > 0 ? `${head} + uncommitted changes in ${dirty.length} file(s)` : head;
  } catch {
    // Run from the agent bundle (deploy/agent-bundle): it records what it was built from.
    try {
      const bundle = JSON.parse(readFileSync(new URL("../../BUNDLE.json", import.meta.url), "utf8")) as { revision?: string };
      if (bundle.revision) return `${bundle.revision} (agent bundle)`;
    } catch {
      // not a bundle either
    }
    return "unknown (not a git checkout)";
  }
}

console.log(`kernelfarm benchmarks: ${selected.join(", ")} at commit ${revision()}`);
console.log(
  `node ${process.version}, ${availableParallelism()} CPU(s) usable, this process may run on CPU(s) ${allowedCpus()}` +
    ` (${allowedCpus() === "0" ? "pinned: every process inherits CPU 0" : "unpinned"}), load average ${loadAverage()}`,
);
const t0 = performance.now();
let failed = false;
// Other work on the machine skews every figure here: say how busy it was
// around each benchmark (this process idle, so it is all someone else's).
const busyNote = (b: number) => `${b.toFixed(2)} CPU${b >= 0.15 ? " — NOT QUIET, figures are disturbed" : " (quiet)"}`;
for (const name of selected) {
  const before = await machineBusy();
  const steal = stealMeter();
  try {
    await BENCHMARKS[name]!.run();
  } catch (err) {
    failed = true;
    console.error(`\nbench ${name} failed: ${(err as Error).stack ?? err}`);
  }
  const stolen = steal();
  const after = await machineBusy();
  console.log(
    `  other processes' CPU, 1 s before: ${busyNote(before)}; 1 s after: ${busyNote(after)}; ` +
      `hypervisor steal during: ${(stolen * 100).toFixed(1)}% of CPU time${stolen >= 0.05 ? " — NOT QUIET, figures are disturbed" : ""}`,
  );
}
console.log(`\ndone in ${((performance.now() - t0) / 1e3).toFixed(1)} s; load average now ${loadAverage()}`);
process.exit(failed ? 1 : 0);
