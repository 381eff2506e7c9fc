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
 *   node --import tsx bench/vta-sim.ts
 */
import { loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { compileVta, conv2dOutputSize, conv2dReference, packNCHW, packOIHW, unpackNCHW, VTA_CONV2D } from "../host-sdk/index.ts";
import { VtaSimulator, runVtaFunction } from "../device-agent/backends/vta-sim/index.ts";
import { startFarm } from "../tests/helpers/processes.ts";
import { randomInt8 } from "../tests/helpers/vta.ts";
import { fmtMs, fmtRatio, median, nowMs, printTable, verdict, type Row } from "./lib/stats.ts";

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

export async function benchVtaSim(): Promise<void> {
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
  const farm = await startFarm(["vta-sim:key=vta"]);
  let farmMedianMs: number;
  let farmCorrect: boolean;
  let farmEngine: string;
  let farmRepeats: readonly number[];
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
      farmMedianMs = timed.median * 1e3;
      farmRepeats = timed.results;
      farmEngine = (await s.stats()).info.gemm_engine ?? "(not reported)";
      const out = (await remote[2]!.toArray()) as Int8Array;
      farmCorrect = unpackNCHW(out, [w.batch, w.outChannels, OH, OW]).every((v, i) => v === want[i]);
    } finally {
      await s.close();
    }
  } finally {
    await farm.stop();
  }
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
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await benchVtaSim();
