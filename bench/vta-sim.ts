/**
 * Benchmark: the VTA simulator's speed on TVM's conv2d tutorial workload
 * (ResNet-18 layer 9: 1×256×14×14, 256 filters 3×3, pad 1 — 115.6 M int8
 * multiply-accumulates), compiled with compileVta and simulated in-process
 * with runVtaFunction (warm-up, then the median of several calls).
 *
 * Baseline, same run: a plain typed-array int8 dot-product loop of the same
 * number of MACs. Also printed: the target (≥ 1 G MAC/s simulated), TVM's C++
 * simulator (30 ms, 3.9 G MAC/s, the next bar), the cycle estimate with 2
 * virtual threads and with 1 (the same work: latency hiding), and one
 * time_evaluator measurement through a real farm on a `vta-sim` board.
 *
 * Then the spread (issue 32): N fresh processes (`--processes N`, default 3)
 * each compile the workload, place it on a simulator as a board does (decode
 * once, arrays in DRAM once) and time 40 calls after 10 warm-ups: per process
 * min / p50 / p90 / max, the median of their p50s and the spread between
 * processes ((max − min) / median of the p50s), and one process's calls in
 * order. After each call the process times a vector probe (the GEMM's
 * arithmetic on registers alone): where the call is slower, was the CPU? The
 * same for N fresh farms: each farm's time_evaluator median.
 *
 *   node --import tsx bench/vta-sim.ts [--processes N]
 *   npm run bench -- vta-sim [--processes N]
 */
import { execFile } from "node:child_process";
import { loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { compileVta, conv2dOutputSize, conv2dReference, packNCHW, packOIHW, unpackNCHW, VTA_CONV2D } from "../host-sdk/index.ts";
import { VtaSimulator, runVtaFunction } from "../device-agent/backends/vta-sim/index.ts";
import { Code, I32, V128, wasmModule } from "../device-agent/backends/vta-sim/wasm-asm.ts";
import { startFarm } from "../tests/helpers/processes.ts";
import { randomInt8 } from "../tests/helpers/vta.ts";
import { fmtMs, fmtRatio, median, nowMs, percentile, printTable, verdict, type Row } from "./lib/stats.ts";

const WARMUP = 3;
/** Timed simulator calls; a multiple of BASELINE_RUNS. */
const RUNS = 15;
const BASELINE_RUNS = 5;
/** Farm measurement: warm-up calls in the board's worker, then time_evaluator's calls per repeat and repeats. */
const FARM_WARMUP = 10;
const FARM_NUMBER = 5;
const FARM_REPEAT = 3;
const TARGET_GMACS = 1;
const TVM_SIM = { ms: 30, gmacs: 3.9 };
/** Vector length of the baseline loop: both operands stay in L1. */
const DOT_LENGTH = 4096;

/** Spread section: warm-up and timed calls per process, processes and farms by default, and the targets. */
const SPREAD_WARMUP = 10;
const SPREAD_RUNS = 40;
const DEFAULT_PROCESSES = 3;
const SPREAD_TARGET_GMACS = 15;
const SPREAD_TARGET = 0.2;
/** This benchmark's flags that take a value (bench/run.ts must not read the value as a benchmark name). */
export const VTA_SIM_VALUE_FLAGS = ["--processes"] as const;
const CHILD_FLAG = "--vta-sim-child";

const gmacsOf = (macs: number, ms: number) => macs / (ms * 1e6);
const fmtGmacs = (g: number) => `${g.toFixed(2)} G MAC/s`;
const bytes = (a: Int8Array) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

/** The baseline: `reps` passes of an int8 dot product over `a`, `b`, accumulated in int32. */
function dotLoop(a: Int8Array, b: Int8Array, reps: number): number {
  let acc = 0;
  const n = a.length;
  for (let r = 0; r < reps; r++) {
    for (let i = 0; i < n; i++) acc = (acc + a[i]! * b[i]!) | 0;
  }
  return acc;
}

/** The conv2d tutorial's module, its packed arguments, the reference output and its MAC count. */
function conv2dWorkload() {
  const w = VTA_CONV2D.workload;
  const { outHeight: OH, outWidth: OW } = conv2dOutputSize(w);
  const macs = w.batch * w.outChannels * OH * OW * w.inChannels * w.kernelH * w.kernelW;
  const compileT0 = nowMs();
  const mod = compileVta(VTA_CONV2D);
  const compileMs = nowMs() - compileT0;
  const name = mod.functions[0]!.name;
  const data = randomInt8(w.batch * w.inChannels * w.height * w.width, 1);
  const kernel = randomInt8(w.outChannels * w.inChannels * w.kernelH * w.kernelW, 2);
  const packedData = packNCHW(data, [w.batch, w.inChannels, w.height, w.width]);
  const packedKernel = packOIHW(kernel, [w.outChannels, w.inChannels, w.kernelH, w.kernelW]);
  const outBytes = w.batch * w.outChannels * OH * OW;
  const args = [bytes(packedData), bytes(packedKernel), new Uint8Array(outBytes)];
  return { w, OH, OW, macs, compileMs, mod, name, data, kernel, packedData, packedKernel, outBytes, args };
}

export async function benchVtaSim(argv: readonly string[] = []): Promise<void> {
  const work = conv2dWorkload();
  const { w, OH, OW, macs, compileMs, mod, name, data, kernel, outBytes, args } = work;

  // In-process: one simulator, warmed up, then the median of RUNS calls.
  const sim = new VtaSimulator();
  const first = runVtaFunction(mod.program, name, args, { simulator: sim });
  const got = unpackNCHW(new Int8Array(first.outputs[2]!.buffer, first.outputs[2]!.byteOffset, outBytes), [w.batch, w.outChannels, OH, OW]);
  const want = conv2dReference(data, kernel, w);
  const correct = got.every((v, i) => v === want[i]);
  if (first.counters.gemm_counter! * sim.hw.batch * sim.hw.blockIn * sim.hw.blockOut !== macs) {
    throw new Error(`the program ran ${first.counters.gemm_counter} GEMM blocks, not the workload's ${macs} MACs`);
  }
  for (let i = 1; i < WARMUP; i++) runVtaFunction(mod.program, name, args, { simulator: sim });

  // Baseline: the same number of MACs as a plain int8 dot-product loop. Its
  // runs interleave with the simulator's so that both see the same machine load.
  const a = randomInt8(DOT_LENGTH, 3);
  const b = randomInt8(DOT_LENGTH, 4);
  const reps = Math.round(macs / DOT_LENGTH);
  let sink = dotLoop(a, b, reps); // warm-up; the result is printed so the loop cannot be dropped
  const simMs: number[] = [];
  const dotMs: number[] = [];
  for (let round = 0; round < BASELINE_RUNS; round++) {
    const t0 = nowMs();
    sink = dotLoop(a, b, reps);
    dotMs.push(nowMs() - t0);
    for (let i = 0; i < RUNS / BASELINE_RUNS; i++) simMs.push(runVtaFunction(mod.program, name, args, { simulator: sim }).wallNs / 1e6);
  }
  const simMedian = median(simMs);
  const simGmacs = gmacsOf(macs, simMedian);
  const dotMedian = median(dotMs);
  const dotGmacs = gmacsOf(reps * DOT_LENGTH, dotMedian);

  // The cycle estimate, the same tiles on 2 virtual threads and on 1.
  const cycles = ([2, 1] as const).map((virtualThreads) => {
    const m = compileVta({ ...VTA_CONV2D, schedule: { ...VTA_CONV2D.schedule, virtualThreads } });
    return runVtaFunction(m.program, name, args).counters;
  });
  const [two, one] = cycles as [Record<string, number>, Record<string, number>];

  // Through a farm: real tracker and agent processes, time_evaluator on the board.
  const { medianMs: farmMedianMs, repeats: farmRepeats, engine: farmEngine, correct: farmCorrect } = await timeOnFarm(work, want);
  const farmGmacs = gmacsOf(macs, farmMedianMs);

  const rows: Row[] = [
    {
      figure: `conv2d tutorial simulated in-process, median of ${RUNS}`,
      value: `${fmtMs(simMedian)}, ${fmtGmacs(simGmacs)}`,
      target: `≥ ${TARGET_GMACS} G MAC/s`,
      verdict: verdict(simGmacs >= TARGET_GMACS),
      baseline: `int8 dot loop ${fmtMs(dotMedian)}, ${fmtGmacs(dotGmacs)}`,
      ratio: fmtRatio(simGmacs / dotGmacs),
    },
    { figure: "  best / worst", value: `${fmtMs(Math.min(...simMs))} / ${fmtMs(Math.max(...simMs))}`, target: "", verdict: "", baseline: "", ratio: "" },
    {
      figure: "  against TVM's C++ simulator (the next bar)",
      value: fmtGmacs(simGmacs),
      target: `${TVM_SIM.ms} ms, ${TVM_SIM.gmacs} G MAC/s`,
      verdict: verdict(simGmacs >= TVM_SIM.gmacs),
      baseline: "",
      ratio: fmtRatio(simGmacs / TVM_SIM.gmacs),
    },
    {
      figure: `through a farm: time_evaluator (${FARM_NUMBER} × ${FARM_REPEAT}), median`,
      value: `${fmtMs(farmMedianMs)}, ${fmtGmacs(farmGmacs)}`,
      target: `≥ ${TARGET_GMACS} G MAC/s`,
      verdict: verdict(farmGmacs >= TARGET_GMACS),
      baseline: `in-process ${fmtMs(simMedian)}`,
      ratio: fmtRatio(farmGmacs / simGmacs),
    },
    {
      figure: "cycle estimate, 2 virtual threads",
      value: `${two.cycle_count!.toLocaleString("en-US")} cycles`,
      target: "< 1 thread",
      verdict: verdict(two.cycle_count! < one.cycle_count!),
      baseline: `1 thread ${one.cycle_count!.toLocaleString("en-US")} cycles`,
      ratio: fmtRatio(two.cycle_count! / one.cycle_count!),
    },
    {
      figure: "  module busy cycles (load / compute / store)",
      value: [two.load_busy_cycles, two.compute_busy_cycles, two.store_busy_cycles].map((c) => c!.toLocaleString("en-US")).join(" / "),
      target: "",
      verdict: "",
      baseline: [one.load_busy_cycles, one.compute_busy_cycles, one.store_busy_cycles].map((c) => c!.toLocaleString("en-US")).join(" / "),
      ratio: "",
    },
  ];
  const [l1, l5, l15] = loadavg();
  printTable(`VTA simulator: conv2d tutorial (${(macs / 1e6).toFixed(1)} M int8 MACs)`, rows, [
    `output equal to the reference: in-process ${correct ? "yes" : "NO"}, through the farm ${farmCorrect ? "yes" : "NO"}; GEMM engine ${sim.core.engine} in process, ${farmEngine} on the board; compile ${fmtMs(compileMs)}.`,
    `farm repeats: ${farmRepeats.map((r) => fmtMs(r * 1e3)).join(", ")} per call.`,
    `simulation time only (runVtaFunction wallNs; argument copies excluded). First call on a fresh simulator ${fmtMs(first.wallNs / 1e6)}; ${WARMUP} warm-ups, then ${RUNS} timed calls. Baseline: ${reps} passes of a ${DOT_LENGTH}-element int8 dot product, median of ${BASELINE_RUNS} interleaved with them (dot = ${sink}).`,
    `farm: real tracker and agent processes on loopback; ${FARM_WARMUP} untimed calls, then time_evaluator on the board (simulation only; the arrays stay on the board).`,
    `load average ${l1!.toFixed(2)} ${l5!.toFixed(2)} ${l15!.toFixed(2)} (1/5/15 min).`,
  ]);
  await benchSpread(processesFlag(argv), work);
}

type Conv2dWork = ReturnType<typeof conv2dWorkload>;

/** time_evaluator on a `vta-sim` board of a fresh farm (real tracker and agent processes): FARM_WARMUP untimed calls, then FARM_NUMBER × FARM_REPEAT. */
async function timeOnFarm(work: Conv2dWork, want: Int8Array) {
  const { w, OH, OW, mod, name, packedData, packedKernel } = work;
  const farm = await startFarm(["vta-sim:key=vta"]);
  try {
    const s = await farm.client.request("vta");
    try {
      await s.upload(mod);
      await s.loadModule(mod.name);
      const shape = (i: number) => mod.functions[0]!.params[i]!.shape!;
      const remote = [await s.array(packedData, shape(0)), await s.array(packedKernel, shape(1)), await s.array({ shape: shape(2), dtype: "int8" })];
      // The worker's simulator is as fresh as the in-process one was: warm it up the same way, untimed.
      await s.timeEvaluator(name, { number: FARM_WARMUP, repeat: 1 })(...remote);
      const timed = await s.timeEvaluator(name, { number: FARM_NUMBER, repeat: FARM_REPEAT })(...remote);
      const engine = (await s.stats()).info.gemm_engine ?? "(not reported)";
      const out = (await remote[2]!.toArray()) as Int8Array;
      const correct = unpackNCHW(out, [w.batch, w.outChannels, OH, OW]).every((v, i) => v === want[i]);
      return { medianMs: timed.median * 1e3, repeats: timed.results as readonly number[], engine, correct };
    } finally {
      await s.close();
    }
  } finally {
    await farm.stop();
  }
}

/** The part of the WebAssembly JS API used here (this project's TypeScript libs do not declare it). */
declare const WebAssembly: {
  Memory: new (desc: { initial: number; maximum: number }) => object;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: Record<string, Record<string, unknown>>) => { readonly exports: Record<string, unknown> };
};

/** Accumulators of the vector probe: as many as the GEMM kernel keeps per batch row (blockOut 16 / 4 lanes) times two. */
const PROBE_ACCUMULATORS = 8;

/**
 * A machine probe for the same process: the GEMM kernel's arithmetic
 * (`i32x4.dot_i16x8_s` added into accumulators, a splat per round) on
 * registers alone — no memory, no simulator. `probe(rounds)` runs rounds × 8
 * dot products. Where it slows down with the simulator, the CPU was slower.
 */
function vectorProbe(): (rounds: number) => void {
  const c = new Code();
  const k = 1;
  const acc = (g: number) => 2 + g;
  const x = 2 + PROBE_ACCUMULATORS;
  const y = (g: number) => x + 1 + g;
  for (let g = 0; g < PROBE_ACCUMULATORS; g++)
    c.i32const(7 * g + 1)
      .i32x4splat()
      .set(y(g));
  c.get(0).set(k);
  c.block();
  c.get(k).i32eqz().brIf(0);
  c.loop();
  c.get(k).i32x4splat().set(x);
  for (let g = 0; g < PROBE_ACCUMULATORS; g++) c.get(acc(g)).get(x).get(y(g)).i32x4dotI16x8s().i32x4add().set(acc(g));
  c.get(k).i32const(-1).i32add().tee(k).brIf(0);
  c.end();
  c.end();
  // Stored, so that no compiler drops the loop.
  for (let g = 0; g < PROBE_ACCUMULATORS; g++)
    c.i32const(0)
      .get(acc(g))
      .v128store(16 * g);
  const bytes = wasmModule(1, [{ exportName: "probe", params: [I32], locals: [I32, ...Array(1 + 2 * PROBE_ACCUMULATORS).fill(V128)], body: c }]);
  const mem = new WebAssembly.Memory({ initial: 1, maximum: 1 });
  return new WebAssembly.Instance(new WebAssembly.Module(bytes), { env: { mem } }).exports.probe as (rounds: number) => void;
}

/**
 * One fresh process's calls, as a board makes them: the function decoded
 * once, its arrays placed in DRAM once, then SPREAD_WARMUP + SPREAD_RUNS
 * calls of the simulator, each followed by the vector probe with as many dot
 * products as the conv2d's GEMMs make. Prints one JSON line: each call's and
 * each probe's ms, in order.
 */
function spreadChild(): void {
  const { mod, name, args, macs } = conv2dWorkload();
  const sim = new VtaSimulator();
  const program = sim.prepare(mod.program, name);
  const buffers = args.map((a) => {
    const b = sim.dram.alloc(a.byteLength);
    b.write(0, a);
    return b;
  });
  const probe = vectorProbe();
  // A dot product is 8 MACs.
  const rounds = Math.round(macs / 8 / PROBE_ACCUMULATORS);
  const callMs: number[] = [];
  const probeMs: number[] = [];
  for (let i = 0; i < SPREAD_WARMUP + SPREAD_RUNS; i++) {
    let t0 = nowMs();
    sim.call(program, buffers);
    callMs.push(nowMs() - t0);
    t0 = nowMs();
    probe(rounds);
    probeMs.push(nowMs() - t0);
  }
  console.log(JSON.stringify({ engine: sim.core.engine, callMs, probeMs }));
}

interface ChildResult {
  engine: string;
  callMs: number[];
  probeMs: number[];
}

function runChild(): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), CHILD_FLAG], (err, stdout, stderr) => {
      if (err) reject(new Error(`vta-sim child failed: ${err.message}\n${stderr}`));
      else resolve(JSON.parse(stdout.trim().split("\n").pop()!) as ChildResult);
    });
  });
}

/** (max − min) / median: how far apart the processes' figures lie. */
const spreadOf = (xs: readonly number[]) => (Math.max(...xs) - Math.min(...xs)) / median(xs);
const fmtPct = (r: number) => `${(r * 100).toFixed(0)} %`;

/** The spread between fresh processes, in process and through fresh farms (issue 32). */
async function benchSpread(processes: number, work: Conv2dWork): Promise<void> {
  const { macs, data, kernel, w } = work;
  const rows: Row[] = [];
  const p50s: number[] = [];
  const probeP50s: number[] = [];
  let firstCalls: number[] = [];
  let firstProbes: number[] = [];
  const engines = new Set<string>();
  for (let p = 0; p < processes; p++) {
    const { engine, callMs, probeMs } = await runChild();
    engines.add(engine);
    if (p === 0) [firstCalls, firstProbes] = [callMs, probeMs];
    const timed = callMs.slice(SPREAD_WARMUP);
    const p50 = median(timed);
    const probeP50 = median(probeMs.slice(SPREAD_WARMUP));
    p50s.push(p50);
    probeP50s.push(probeP50);
    rows.push({
      figure: `process ${p + 1}: min / p50 / p90 / max`,
      value: `${[Math.min(...timed), p50, percentile(timed, 90), Math.max(...timed)].map(fmtMs).join(" / ")} (p50 ${fmtGmacs(gmacsOf(macs, p50))})`,
      target: "",
      verdict: "",
      baseline: `vector probe p50 ${fmtMs(probeP50)}`,
      ratio: fmtRatio(p50 / probeP50),
    });
  }
  const mid = median(p50s);
  rows.push(
    {
      figure: `in process: median of ${processes} processes' p50`,
      value: `${fmtMs(mid)}, ${fmtGmacs(gmacsOf(macs, mid))}`,
      target: `≥ ${SPREAD_TARGET_GMACS} G MAC/s`,
      verdict: verdict(gmacsOf(macs, mid) >= SPREAD_TARGET_GMACS),
      baseline: "",
      ratio: "",
    },
    {
      figure: "  spread between processes",
      value: fmtPct(spreadOf(p50s)),
      target: `≤ ${fmtPct(SPREAD_TARGET)}`,
      verdict: verdict(spreadOf(p50s) <= SPREAD_TARGET),
      baseline: "",
      ratio: "",
    },
  );
  const want = conv2dReference(data, kernel, w);
  const farms: Awaited<ReturnType<typeof timeOnFarm>>[] = [];
  for (let f = 0; f < processes; f++) farms.push(await timeOnFarm(work, want));
  const farmMedians = farms.map((f) => f.medianMs);
  const farmMid = median(farmMedians);
  rows.push(
    {
      figure: `through ${processes} fresh farms: time_evaluator medians`,
      value: farmMedians.map(fmtMs).join(" / "),
      target: "",
      verdict: "",
      baseline: "",
      ratio: "",
    },
    {
      figure: "  median of the farms",
      value: `${fmtMs(farmMid)}, ${fmtGmacs(gmacsOf(macs, farmMid))}`,
      target: `≥ ${SPREAD_TARGET_GMACS} G MAC/s`,
      verdict: verdict(gmacsOf(macs, farmMid) >= SPREAD_TARGET_GMACS),
      baseline: `in process ${fmtMs(mid)}`,
      ratio: fmtRatio(mid / farmMid),
    },
    {
      figure: "  spread between farms",
      value: fmtPct(spreadOf(farmMedians)),
      target: `≤ ${fmtPct(SPREAD_TARGET)}`,
      verdict: verdict(spreadOf(farmMedians) <= SPREAD_TARGET),
      baseline: "",
      ratio: "",
    },
  );
  printTable(`VTA simulator: the spread between fresh processes (conv2d tutorial, ${processes} processes, ${processes} farms)`, rows, [
    `in process: a fresh node process each, the function decoded and its arrays placed once as on a board, ${SPREAD_WARMUP} warm-up calls, then ${SPREAD_RUNS} timed; GEMM engine ${[...engines].join(", ")}.`,
    `vector probe: after each call, the GEMM kernel's arithmetic on registers alone (${macs / 8} i32x4.dot_i16x8_s, as many as the call's GEMMs), no memory, no simulator; the same machine's speed at that moment.`,
    `process 1, every call in order (the first ${SPREAD_WARMUP} untimed): ${firstCalls.map((m) => m.toFixed(1)).join(" ")} ms.`,
    `process 1, the probe after each: ${firstProbes.map((m) => m.toFixed(1)).join(" ")} ms.`,
    `farms: ${farms.map((f, i) => `farm ${i + 1} repeats ${f.repeats.map((r) => (r * 1e3).toFixed(2)).join(", ")} ms (${f.engine}${f.correct ? "" : ", OUTPUT WRONG"})`).join("; ")}.`,
  ]);
}

function processesFlag(argv: readonly string[]): number {
  const i = argv.indexOf("--processes");
  if (i < 0) return DEFAULT_PROCESSES;
  const n = Number(argv[i + 1]);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--processes needs a whole number ≥ 1, got ${argv[i + 1]}`);
  return n;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv.includes(CHILD_FLAG)) spreadChild();
  else await benchVtaSim(process.argv.slice(2));
}
