/**
 * Tuning the 3×3 conv2d layers of ResNet-18 on the farm's CUDA boards, two
 * algorithms competing in one run: autotvm's direct template
 * (examples/lib/cuda-conv2d-template.ts: tile_f/y/x, tile_rc/ry/rx,
 * auto_unroll_max_step, unroll_explicit, and a cluster split of the
 * reduction) and a fused Winograd F(2×2,3×3) template
 * (examples/lib/cuda-winograd-template.ts). Each round gives both templates
 * a share of the batch — half each while they draw at random, then three
 * quarters to the one ahead — and each draws at random, then mutates its
 * best configurations so far.
 *
 * Configurations the template rules out (too many threads, shared memory)
 * are dropped before anything is compiled; the rest compile with nvcc on
 * this host, many at once, and a kernel whose registers × threads cannot
 * launch on the board is INVALID_CONFIG on the host, from ptxas's report and
 * the board's registered limits, without being uploaded. Operands are
 * generated on the boards from a seed; every candidate is checked exactly
 * against a host reference computed once per layer. Timings carry the
 * precision reached (`--target-rse`). Results go to a JSON-lines file that a
 * rerun with the same --out resumes from; --baseline (the JSON of
 * examples/cudnn-baseline.py, run on the same GPU) adds cuDNN to the table
 * and the plots.
 *
 *   node --import tsx examples/tune-cuda-conv2d.ts --tracker HOST:PORT [--key cuda]
 *        [--layers 7x7x512,14x14x256,28x28x128,56x56x64] [--candidates 200] [--batch 32]
 *        [--seed 1] [--arch sm_90] [--target-rse 0.01] [--baseline cudnn.json] [--out DIR]
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { MEASURE_OUTCOMES, Measurer, connectTracker, type AnyTypedArray, type Candidate, type MeasureArg, type MeasureResult, type RandomFill } from "kernelfarm";
import {
  CONV_FUNCTION, RESNET18_3X3_LAYERS, compileDirect, convFlops, directConfigProblem, directLaunch, directSpace, directThreads, hostConv2d,
  type ConvProblem, type DirectConfig,
} from "./lib/cuda-conv2d-template.ts";
import { WINOGRAD_SPACE, compileWinograd, winogradConfigProblem, winogradLaunch, winogradThreads, type WinogradConfig } from "./lib/cuda-winograd-template.ts";
import { boardsOf } from "./lib/boards.ts";
import { writeBestSoFarSvg } from "./lib/plot.ts";
import { Searcher, configKey, countOutcomes, formatTable, outcomeLine, spaceSize, type KnobSpace, type TrialOrigin } from "./lib/search.ts";

const USAGE =
  "usage: node --import tsx examples/tune-cuda-conv2d.ts --tracker HOST:PORT [--key cuda] [--layers 7x7x512,...] [--candidates 200] [--batch 32] [--seed 1] [--arch sm_90] [--target-rse 0.01] [--baseline cudnn.json] [--out DIR]";
const { values: args } = parseArgs({
  options: {
    tracker: { type: "string" },
    key: { type: "string", default: "cuda" },
    layers: { type: "string", default: Object.keys(RESNET18_3X3_LAYERS).reverse().join(",") },
    candidates: { type: "string", default: "200" },
    batch: { type: "string", default: "32" },
    seed: { type: "string", default: "1" },
    arch: { type: "string", default: "sm_90" },
    "target-rse": { type: "string", default: "0.01" },
    baseline: { type: "string" },
    out: { type: "string" },
  },
});
if (!args.tracker) {
  console.error(`${USAGE}\n--tracker is required: CUDA boards need a GPU, and this script starts no farm of its own`);
  process.exit(2);
}

function numberArg(name: string, value: string | undefined, min: number, integer = true): number {
  const n = Number(value);
  if ((integer && !Number.isInteger(n)) || !(n >= min)) throw new Error(`--${name} must be ${integer ? "an integer" : "a number"} ≥ ${min}, got ${JSON.stringify(value)}`);
  return n;
}

const perLayer = numberArg("candidates", args.candidates, 2);
const batchSize = numberArg("batch", args.batch, 2);
const seed = numberArg("seed", args.seed, 0);
const targetRse = numberArg("target-rse", args["target-rse"], 0, false);
const layers = args.layers!.split(",").map((name) => {
  const p = RESNET18_3X3_LAYERS[name];
  if (!p) throw new Error(`--layers: no layer ${JSON.stringify(name)}; the layers are ${Object.keys(RESNET18_3X3_LAYERS).join(", ")}`);
  return { name, p };
});
/** cuDNN's figures per layer (examples/cudnn-baseline.py), if given. */
const baseline: Record<string, { us: number; gflops: number; algo?: string }> = args.baseline ? JSON.parse(readFileSync(args.baseline, "utf8")).conv2d ?? {} : {};
const outDir = resolve(args.out ?? mkdtempSync(join(tmpdir(), "kfarm-tune-conv2d-")));
mkdirSync(outDir, { recursive: true });
const resultsFile = join(outDir, "tune-cuda-conv2d.jsonl");
const summaryFile = join(outDir, "tune-cuda-conv2d-summary.json");

type Template = "direct" | "winograd";

/** Data and filters as seeded inputs, generated on the board (whole numbers −4…4: every sum is exact in float32). */
function operands(p: ConvProblem, s: number): [Extract<MeasureArg, { random: RandomFill }>, Extract<MeasureArg, { random: RandomFill }>] {
  const ints = (k: number) => ({ seed: k >>> 0, low: -4, high: 4, integers: true });
  return [
    { random: ints(s * 2), shape: [p.c, p.h, p.w], dtype: "float32" },
    { random: ints(s * 2 + 1), shape: [p.k, p.c, 3, 3], dtype: "float32" },
  ];
}

interface LayerReport {
  layer: string;
  flops: number;
  candidates: number;
  seconds: number;
  outcomes: Record<string, number>;
  /** Drawn and dropped by the template's rules before compiling. */
  droppedBeforeCompile: number;
  best: Partial<Record<Template, { gflops: number; us: number; rse?: number; config: string; found: number; threads: number; registers?: number }>>;
  cudnn?: { us: number; gflops: number; algo?: string };
  compileSeconds: number;
  referenceSeconds: number;
  /** Per candidate, in completion order: template, GFLOP/s (NaN if not OK), seconds since the layer began, the board's own seconds for it, its round. */
  curve: { template: Template; gflops: number; at: number; boardS?: number; round: number }[];
  /**
   * What a candidate costs beyond the board's own time for it (checks, timing), between two results
   * of a round (the first of a round waits for the search and its compiles): p25, p50, p75, ms.
   */
  farmOverheadMs?: [number, number, number];
}

const client = await connectTracker(args.tracker);
const reports: LayerReport[] = [];
let exitCode = 0;
try {
  const boards = await boardsOf(client, args.key!, args.tracker);
  const gpu = boards[0]!.capabilities.name ?? boards[0]!.id;
  console.log(`${boards.length} board(s) of key ${args.key}: ${boards.map((b) => b.id).join(", ")} (${gpu}); results in ${resultsFile}`);
  const measurer = new Measurer(client, {
    key: args.key!,
    // A CUDA graph of `number` launches per repeat: the kernel's own time, without the launch overhead (examples/cudnn-baseline.py times cuDNN the same way).
    timeEvaluator: { number: 20, repeat: 10, minRepeatMs: 5, graph: true, ...(targetRse > 0 ? { targetRse, budgetMs: 2000 } : {}) },
    timeoutMs: 20_000,
    resultsFile,
  });
  try {
    for (const { name, p } of layers) reports.push(await tuneLayer(measurer, name, p));
  } finally {
    await measurer.close();
  }
  writeFileSync(summaryFile, `${JSON.stringify({ gpu, boards: boards.map((b) => b.id), seed, targetRse, layers: reports }, null, 1)}\n`);
  printTable(reports);
  console.log(`summary: ${summaryFile}`);
  if (reports.some((r) => (r.outcomes.WRONG_ANSWER ?? 0) > 0)) {
    console.error("some candidates computed a wrong answer");
    exitCode = 1;
  }
  if (reports.some((r) => !r.best.direct && !r.best.winograd)) {
    console.error("a layer had no OK candidate");
    exitCode = 1;
  }
} finally {
  client.close();
}
process.exitCode = exitCode;

async function tuneLayer(measurer: Measurer, layer: string, p: ConvProblem): Promise<LayerReport> {
  const flops = convFlops(p);
  const [data, kernel] = operands(p, seed);
  let referenceSeconds = 0;
  const reference = ([d, k]: AnyTypedArray[]) => {
    const t0 = performance.now();
    const out = hostConv2d(d as Float32Array, k as Float32Array, p);
    referenceSeconds = (performance.now() - t0) / 1e3;
    return [out];
  };
  const space = directSpace(p);
  const searchers = {
    direct: new Searcher({ space, seed, higherIsBetter: true, valid: (c: DirectConfig) => directConfigProblem(c, p, args.arch) === undefined }),
    winograd: new Searcher({ space: WINOGRAD_SPACE, seed: seed + 1, higherIsBetter: true, valid: (c: WinogradConfig) => winogradConfigProblem(c, p, args.arch) === undefined }),
  };
  console.log(
    `\n${layer}: conv2d ${p.c}×${p.h}×${p.w} → ${p.k}, 3×3, pad 1, float32, batch 1 (${(flops / 1e9).toFixed(3)} GFLOP); ` +
      `spaces: direct ${spaceSize(space).toLocaleString("en-US")}, winograd ${spaceSize(WINOGRAD_SPACE).toLocaleString("en-US")}`,
  );
  const t0 = performance.now();
  let compileSeconds = 0;
  const registers = new Map<string, number>();
  const curve: LayerReport["curve"] = [];
  const results = new Map<string, MeasureResult>();
  const gflops = (r: MeasureResult | undefined) => (r?.outcome === "OK" && r.timing ? flops / r.timing.median / 1e9 : NaN);

  const candidate = (template: Template, config: DirectConfig | WinogradConfig): Candidate => {
    const id = `${layer}/${template}/${configKey(config)}`;
    return {
      id,
      module: async () => {
        const c0 = performance.now();
        const m = template === "direct" ? await compileDirect(config as DirectConfig, p, { arch: args.arch! }) : await compileWinograd(config as WinogradConfig, p, { arch: args.arch! });
        compileSeconds += (performance.now() - c0) / 1e3;
        registers.set(id, m.resources[CONV_FUNCTION]!.registers);
        return m;
      },
      function: CONV_FUNCTION,
      reference,
      args: [data, kernel, { output: { shape: [p.k, p.h, p.w], dtype: "float32" } }],
      launch: template === "direct" ? directLaunch(config as DirectConfig) : winogradLaunch(config as WinogradConfig, p),
    };
  };

  let measured = 0;
  while (measured < perLayer) {
    const size = Math.min(batchSize, perLayer - measured);
    // Half each while both draw at random; then three quarters to the template ahead.
    const bd = searchers.direct.best()?.score ?? NaN;
    const bw = searchers.winograd.best()?.score ?? NaN;
    const random = searchers.direct.round < 2;
    const directShare = random || Number.isNaN(bd) || Number.isNaN(bw) ? 0.5 : bd >= bw ? 0.75 : 0.25;
    const nd = Math.round(size * directShare);
    const round = {
      direct: searchers.direct.propose(nd),
      winograd: searchers.winograd.propose(size - nd),
    };
    const batch: { template: Template; config: DirectConfig | WinogradConfig; origin: TrialOrigin }[] = [
      ...round.direct.map((b) => ({ template: "direct" as const, ...b })),
      ...round.winograd.map((b) => ({ template: "winograd" as const, ...b })),
    ];
    if (batch.length === 0) break;
    const cands = batch.map((b) => candidate(b.template, b.config));
    const byId = new Map(cands.map((c, i) => [c.id!, batch[i]!.template]));
    const reported = new Set<string>();
    const roundNo = searchers.direct.round - 1;
    const point = (r: MeasureResult) => {
      reported.add(r.id);
      const boardNs = r.stats?.measure_wall_ns;
      curve.push({ template: byId.get(r.id)!, gflops: gflops(r), at: (performance.now() - t0) / 1e3, ...(boardNs ? { boardS: boardNs / 1e9 } : {}), round: roundNo });
    };
    const got = await measurer.measure(cands, { onResult: point });
    // Candidates resumed from the results file do not pass through onResult.
    for (const r of got) {
      results.set(r.id, r);
      if (!reported.has(r.id)) point(r);
    }
    searchers.direct.record(round.direct, got.slice(0, round.direct.length).map(gflops));
    searchers.winograd.record(round.winograd, got.slice(round.direct.length).map(gflops));
    measured += batch.length;
    const best = Math.max(...got.map(gflops).filter((g) => !Number.isNaN(g)));
    console.log(
      `  round ${searchers.direct.round - 1}: ${round.direct.length} direct + ${round.winograd.length} winograd; ${outcomeLine(got.map((r) => r.outcome), MEASURE_OUTCOMES)}; ` +
        `best of the round ${Number.isFinite(best) ? `${best.toFixed(0)} GFLOP/s` : "—"}; ${((performance.now() - t0) / 1e3).toFixed(1)} s`,
    );
  }
  const seconds = (performance.now() - t0) / 1e3;
  const report: LayerReport = {
    layer,
    flops,
    candidates: measured,
    seconds,
    outcomes: countOutcomes([...results.values()].map((r) => r.outcome), MEASURE_OUTCOMES),
    droppedBeforeCompile: searchers.direct.rejected + searchers.winograd.rejected,
    best: {},
    ...(baseline[layer] ? { cudnn: baseline[layer] } : {}),
    compileSeconds,
    referenceSeconds,
    curve,
  };
  for (const template of ["direct", "winograd"] as const) {
    const s = searchers[template] as Searcher<KnobSpace>;
    const top = s.best();
    if (!top) continue;
    const id = `${layer}/${template}/${configKey(top.config)}`;
    const r = results.get(id)!;
    report.best[template] = {
      gflops: top.score,
      us: r.timing!.median * 1e6,
      ...(r.timing!.rse !== undefined ? { rse: r.timing!.rse } : {}),
      config: configKey(top.config),
      found: s.trials.indexOf(top) + 1,
      threads: template === "direct" ? directThreads(top.config as DirectConfig) : winogradThreads(top.config as WinogradConfig),
      ...(registers.has(id) ? { registers: registers.get(id) } : {}),
    };
  }
  const overheads = curve.flatMap((c, i) => (i > 0 && c.boardS !== undefined && curve[i - 1]!.round === c.round ? [(c.at - curve[i - 1]!.at - c.boardS) * 1e3] : [])).sort((a, b) => a - b);
  if (overheads.length > 0) report.farmOverheadMs = [0.25, 0.5, 0.75].map((q) => overheads[Math.floor(q * (overheads.length - 1))]!) as [number, number, number];
  const o = report.outcomes;
  const invalid = (o.INVALID_CONFIG ?? 0) + report.droppedBeforeCompile;
  console.log(
    `  ${measured} candidates in ${seconds.toFixed(1)} s (${(measured / seconds).toFixed(1)}/s; nvcc ${compileSeconds.toFixed(1)} CPU-s on this host, the reference ${referenceSeconds.toFixed(2)} s): ` +
      `${outcomeLine([...results.values()].map((r) => r.outcome), MEASURE_OUTCOMES)}; ` +
      `${report.farmOverheadMs ? `farm overhead per candidate beyond the board's time p50 ${report.farmOverheadMs[1].toFixed(1)} ms (p25 ${report.farmOverheadMs[0].toFixed(1)}, p75 ${report.farmOverheadMs[2].toFixed(1)}); ` : ""}` +
      `invalid before upload: ${invalid} of ${measured + report.droppedBeforeCompile} drawn (${report.droppedBeforeCompile} by the template's rules before compiling, ${o.INVALID_CONFIG ?? 0} INVALID_CONFIG from ptxas's report)`,
  );
  for (const r of [...results.values()].filter((r) => r.outcome !== "OK" && r.outcome !== "INVALID_CONFIG").slice(0, 3)) console.log(`    ${r.outcome} ${r.id}: ${r.message?.split("\n")[0]}`);
  for (const [t, b] of Object.entries(report.best)) console.log(`  best ${t}: ${b.gflops.toFixed(0)} GFLOP/s, ${b.us.toFixed(2)} µs (${b.config}; ${b.threads} threads, ${b.registers ?? "?"} registers; candidate ${b.found})`);
  plots(report);
  return report;
}

function plots(r: LayerReport): void {
  const label = { direct: "direct (autotvm's knobs)", winograd: "Winograd F(2x2,3x3)" };
  const of = (t: Template) => r.curve.flatMap((c, i) => (c.template === t ? [{ ...c, i }] : []));
  const series = (["direct", "winograd"] as const).map((t) => ({ label: label[t], points: of(t) }));
  const references = r.cudnn ? [{ label: `cuDNN (${algorithmOf(r.cudnn.algo)})`, value: r.cudnn.gflops }] : [];
  const title = `conv2d ${r.layer} on the farm's GPU: best-so-far`;
  // x: the candidate's place among both templates' candidates (in completion order), or its time.
  writeBestSoFarSvg(join(outDir, `conv2d-${r.layer}-candidates.svg`), series.map((s) => ({ label: s.label, values: s.points.map((c) => c.gflops), x: s.points.map((c) => c.i + 1) })), {
    title,
    yLabel: "GFLOP/s",
    higherIsBetter: true,
    xLabel: "candidates measured (both templates)",
    references,
  });
  writeBestSoFarSvg(join(outDir, `conv2d-${r.layer}-seconds.svg`), series.map((s) => ({ label: s.label, values: s.points.map((c) => c.gflops), x: s.points.map((c) => c.at) })), {
    title,
    yLabel: "GFLOP/s",
    higherIsBetter: true,
    xLabel: "seconds since the layer's search began",
    references,
  });
}

/** cuDNN's algorithm in two words, from its kernel's name. */
function algorithmOf(kernel: string | undefined): string {
  const k = (kernel ?? "").toLowerCase();
  return k.includes("winograd") ? "Winograd" : k.includes("fft") ? "FFT" : k.includes("implicit_gemm") || k.includes("implicit_convolve") ? "implicit GEMM" : k.includes("gemm") ? "GEMM" : kernel ? kernel.slice(0, 24) : "best algorithm";
}

function printTable(rs: readonly LayerReport[]): void {
  console.log("\n" + formatTable(
    ["layer", "best tuned", "µs", "GFLOP/s", "cuDNN µs", "cuDNN GFLOP/s", "tuned ÷ cuDNN", "candidates", "invalid before upload", "wall s"],
    rs.map((r) => {
      const best = [r.best.direct, r.best.winograd].filter((b) => b !== undefined).sort((a, b) => b.gflops - a.gflops)[0];
      const which = best === r.best.direct ? "direct" : "winograd";
      const invalid = (r.outcomes.INVALID_CONFIG ?? 0) + r.droppedBeforeCompile;
      return [
        r.layer, best ? which : "—", best ? best.us.toFixed(2) : "—", best ? best.gflops.toFixed(0) : "—",
        r.cudnn ? r.cudnn.us.toFixed(2) : "—", r.cudnn ? r.cudnn.gflops.toFixed(0) : "—",
        best && r.cudnn ? `${(best.gflops / r.cudnn.gflops).toFixed(2)}×` : "—",
        r.candidates, `${invalid} of ${r.candidates + r.droppedBeforeCompile}`, r.seconds.toFixed(1),
      ];
    }),
  ));
  if (existsSync(resultsFile)) console.log(`results: ${resultsFile}; plots: ${outDir}/conv2d-LAYER-{candidates,seconds}.svg`);
}
