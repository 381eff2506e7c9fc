/**
 * Tuning the 3×3 conv2d layers of ResNet-18 on the farm's CUDA boards, two
 * algorithms competing in one run: autotvm's direct template
 * (examples/lib/cuda-conv2d-template.ts: tile_f/y/x, tile_rc/ry/rx,
 * auto_unroll_max_step, unroll_explicit, and a cluster split of the
 * reduction) and a fused Winograd F(2×2,3×3) template
 * (examples/lib/cuda-winograd-template.ts). Both feed one measure() pipeline
 * (examples/lib/tune-loop.ts): half the candidates each until both have
 * results, then three quarters to the one ahead; each proposes with a cost
 * model trained on what was measured so far (`--search model`, the default;
 * `--search evolution`: random draws, then mutations of the best), and every
 * board takes the next built candidate the moment it finishes one.
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
 *        [--layers 7x7x512,14x14x256,28x28x128,56x56x64] [--candidates 200] [--search model|evolution]
 *        [--seed 1] [--arch sm_90] [--target-rse 0.01] [--baseline cudnn.json] [--out DIR]
 *        [--boards N] [--compile-jobs N] [--queue-depth N] [--in-flight N] [--stop-at GFLOPS]
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import {
  MEASURE_OUTCOMES,
  Measurer,
  connectTracker,
  formatReport,
  type AnyTypedArray,
  type Candidate,
  type MeasureArg,
  type MeasureReport,
  type MeasureResult,
  type RandomFill,
} from "kernelfarm";
import {
  CONV_FUNCTION,
  RESNET18_3X3_LAYERS,
  compileDirect,
  convFlops,
  directConfigProblem,
  directLaunch,
  directSource,
  directSpace,
  directThreads,
  hostConv2d,
  type ConvProblem,
  type DirectConfig,
} from "./lib/cuda-conv2d-template.ts";
import {
  WINOGRAD_SPACE,
  compileWinograd,
  winogradConfigProblem,
  winogradLaunch,
  winogradSource,
  winogradThreads,
  type WinogradConfig,
} from "./lib/cuda-winograd-template.ts";
import { boardsOf, exitWithFarmError } from "./lib/boards.ts";
import { writeBestSoFarSvg } from "./lib/plot.ts";
import { TUNING_OPTIONS, numberArg, pipelineArgs, searchArg } from "./lib/args.ts";
import { Searcher, configKey, countOutcomes, formatTable, outcomeLine, spaceSize, type KnobSpace } from "./lib/search.ts";
import { tuneArms, type TuneArm } from "./lib/tune-loop.ts";

const USAGE =
  "usage: node --import tsx examples/tune-cuda-conv2d.ts --tracker HOST:PORT [--key cuda] [--layers 7x7x512,...] [--candidates 200] [--search model|evolution] [--seed 1] [--arch sm_90] [--target-rse 0.01] [--baseline cudnn.json] [--out DIR] [--boards N] [--compile-jobs N] [--queue-depth N] [--in-flight N] [--stop-at GFLOPS]";
const { values: args } = parseArgs({
  options: {
    tracker: { type: "string" },
    key: { type: "string", default: "cuda" },
    layers: { type: "string", default: Object.keys(RESNET18_3X3_LAYERS).reverse().join(",") },
    candidates: { type: "string", default: "200" },
    ...TUNING_OPTIONS,
    "stop-at": { type: "string" },
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

const perLayer = numberArg("candidates", args.candidates, 2);
const strategy = searchArg(args.search);
const pipeline = pipelineArgs(args);
const stopAt = args["stop-at"] === undefined ? undefined : numberArg("stop-at", args["stop-at"], 0, false);
const seed = numberArg("seed", args.seed, 0);
const targetRse = numberArg("target-rse", args["target-rse"], 0, false);
const layers = args.layers!.split(",").map((name) => {
  const p = RESNET18_3X3_LAYERS[name];
  if (!p) throw new Error(`--layers: no layer ${JSON.stringify(name)}; the layers are ${Object.keys(RESNET18_3X3_LAYERS).join(", ")}`);
  return { name, p };
});
/** cuDNN's figures per layer (examples/cudnn-baseline.py), if given. */
const baseline: Record<string, { us: number; gflops: number; algo?: string }> = args.baseline
  ? (JSON.parse(readFileSync(args.baseline, "utf8")).conv2d ?? {})
  : {};
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
  /** Per candidate, in completion order: template, GFLOP/s (NaN if not OK), seconds since the layer began, the board, the board's own seconds for it. */
  curve: { template: Template; gflops: number; at: number; board?: string; boardS?: number }[];
  /**
   * What a candidate costs beyond the board's own time for it (checks, timing): the gap between two
   * results of one board less the board's time for the second, p25, p50, p75, ms.
   */
  farmOverheadMs?: [number, number, number];
  search: string;
  /** CPU seconds this script's own process spent (the search, the pipeline, the reference): one core is its ceiling. */
  hostCpuSeconds: number;
  /** How the pipeline used the boards (measure()'s report). */
  farm: MeasureReport;
}

const client = await connectTracker(args.tracker);
const reports: LayerReport[] = [];
let exitCode = 0;
try {
  const boards = await boardsOf(client, args.key!, { kinds: ["cuda"] }).catch(exitWithFarmError);
  const gpu = boards[0]!.capabilities.name ?? boards[0]!.id;
  console.log(`${boards.length} board(s) of key ${args.key}: ${boards.map((b) => b.id).join(", ")} (${gpu}); results in ${resultsFile}`);
  const measurer = new Measurer(client, {
    key: args.key!,
    ...pipeline,
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
  writeFileSync(summaryFile, `${JSON.stringify({ gpu, boards: boards.map((b) => b.id), seed, targetRse, search: strategy, layers: reports }, null, 1)}\n`);
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
    direct: new Searcher({ space, seed, strategy, higherIsBetter: true, valid: (c: DirectConfig) => directConfigProblem(c, p, args.arch) === undefined }),
    winograd: new Searcher({
      space: WINOGRAD_SPACE,
      seed: seed + 1,
      strategy,
      higherIsBetter: true,
      valid: (c: WinogradConfig) => winogradConfigProblem(c, p, args.arch) === undefined,
    }),
  };
  console.log(
    `\n${layer}: conv2d ${p.c}×${p.h}×${p.w} → ${p.k}, 3×3, pad 1, float32, batch 1 (${(flops / 1e9).toFixed(3)} GFLOP); ` +
      `spaces: direct ${spaceSize(space).toLocaleString("en-US")}, winograd ${spaceSize(WINOGRAD_SPACE).toLocaleString("en-US")}; search: ${strategy}`,
  );
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  let compileSeconds = 0;
  const registers = new Map<string, number>();
  const gflops = (r: MeasureResult | undefined) => (r?.outcome === "OK" && r.timing ? flops / r.timing.median / 1e9 : NaN);

  const candidate = (template: Template, config: DirectConfig | WinogradConfig): Candidate => {
    const id = `${layer}/${template}/${configKey(config)}`;
    const source = template === "direct" ? directSource(config as DirectConfig, p) : winogradSource(config as WinogradConfig, p);
    return {
      id,
      // What defines the module: a resume matches it without compiling, and a changed template is measured again.
      definition: { template, source, arch: args.arch },
      module: async () => {
        const c0 = performance.now();
        const m =
          template === "direct"
            ? await compileDirect(config as DirectConfig, p, { arch: args.arch! })
            : await compileWinograd(config as WinogradConfig, p, { arch: args.arch! });
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
  const arms: TuneArm[] = (["direct", "winograd"] as const).map((template) => ({
    name: template,
    searcher: searchers[template] as unknown as Searcher<KnobSpace>,
    candidate: (config) => candidate(template, config as DirectConfig | WinogradConfig),
  }));
  const run = await tuneArms(measurer, arms, { total: perLayer, score: gflops, higherIsBetter: true, stopAt, log: (l) => console.log(l) });
  const results = new Map(run.results.map((r) => [r.id, r]));
  const curve: LayerReport["curve"] = run.points.map((pt) => {
    const boardNs = pt.result.stats?.measure_wall_ns;
    return {
      template: pt.arm as Template,
      gflops: pt.score,
      at: pt.at,
      ...(pt.result.board ? { board: pt.result.board } : {}),
      ...(boardNs ? { boardS: boardNs / 1e9 } : {}),
    };
  });
  const measured = run.results.length;
  console.log(formatReport(run.report).replace(/^/gm, "  "));
  const seconds = (performance.now() - t0) / 1e3;
  const report: LayerReport = {
    layer,
    flops,
    candidates: measured,
    seconds,
    outcomes: countOutcomes(
      [...results.values()].map((r) => r.outcome),
      MEASURE_OUTCOMES,
    ),
    droppedBeforeCompile: searchers.direct.rejected + searchers.winograd.rejected,
    best: {},
    ...(baseline[layer] ? { cudnn: baseline[layer] } : {}),
    compileSeconds,
    referenceSeconds,
    curve,
    search: strategy,
    hostCpuSeconds: ((c) => (c.user + c.system) / 1e6)(process.cpuUsage(cpu0)),
    farm: run.report,
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
  const overheads = farmOverheads(curve);
  if (overheads.length > 0)
    report.farmOverheadMs = [0.25, 0.5, 0.75].map((q) => overheads[Math.floor(q * (overheads.length - 1))]!) as [number, number, number];
  const o = report.outcomes;
  const invalid = (o.INVALID_CONFIG ?? 0) + report.droppedBeforeCompile;
  console.log(
    `  ${measured} candidates in ${seconds.toFixed(1)} s (${(measured / seconds).toFixed(1)}/s; nvcc ${compileSeconds.toFixed(1)} CPU-s on this host, the reference ${referenceSeconds.toFixed(2)} s): ` +
      `${outcomeLine(
        [...results.values()].map((r) => r.outcome),
        MEASURE_OUTCOMES,
      )}; ` +
      `${report.farmOverheadMs ? `farm overhead per candidate beyond the board's time p50 ${report.farmOverheadMs[1].toFixed(1)} ms (p25 ${report.farmOverheadMs[0].toFixed(1)}, p75 ${report.farmOverheadMs[2].toFixed(1)}); ` : ""}` +
      `invalid before upload: ${invalid} of ${measured + report.droppedBeforeCompile} drawn (${report.droppedBeforeCompile} by the template's rules before compiling, ${o.INVALID_CONFIG ?? 0} INVALID_CONFIG from ptxas's report)`,
  );
  for (const r of [...results.values()].filter((r) => r.outcome !== "OK" && r.outcome !== "INVALID_CONFIG").slice(0, 3))
    console.log(`    ${r.outcome} ${r.id}: ${r.message?.split("\n")[0]}`);
  for (const [t, b] of Object.entries(report.best))
    console.log(
      `  best ${t}: ${b.gflops.toFixed(0)} GFLOP/s, ${b.us.toFixed(2)} µs (${b.config}; ${b.threads} threads, ${b.registers ?? "?"} registers; candidate ${b.found})`,
    );
  plots(report);
  return report;
}

/** Per board, the gap between consecutive results less the board's own time for the second: what the farm added. */
function farmOverheads(curve: LayerReport["curve"]): number[] {
  const last = new Map<string, number>();
  const out: number[] = [];
  for (const c of curve) {
    if (!c.board) continue;
    const before = last.get(c.board);
    last.set(c.board, c.at);
    if (before !== undefined && c.boardS !== undefined) out.push((c.at - before - c.boardS) * 1e3);
  }
  return out.sort((a, b) => a - b);
}

function plots(r: LayerReport): void {
  const label = { direct: "direct (autotvm's knobs)", winograd: "Winograd F(2x2,3x3)" };
  const of = (t: Template) => r.curve.flatMap((c, i) => (c.template === t ? [{ ...c, i }] : []));
  const series = (["direct", "winograd"] as const).map((t) => ({ label: label[t], points: of(t) }));
  const references = r.cudnn ? [{ label: `cuDNN (${algorithmOf(r.cudnn.algo)})`, value: r.cudnn.gflops }] : [];
  const title = `conv2d ${r.layer} on the farm's GPU: best-so-far`;
  // x: the candidate's place among both templates' candidates (in completion order), or its time.
  writeBestSoFarSvg(
    join(outDir, `conv2d-${r.layer}-candidates.svg`),
    series.map((s) => ({ label: s.label, values: s.points.map((c) => c.gflops), x: s.points.map((c) => c.i + 1) })),
    {
      title,
      yLabel: "GFLOP/s",
      higherIsBetter: true,
      xLabel: "candidates measured (both templates)",
      references,
    },
  );
  writeBestSoFarSvg(
    join(outDir, `conv2d-${r.layer}-seconds.svg`),
    series.map((s) => ({ label: s.label, values: s.points.map((c) => c.gflops), x: s.points.map((c) => c.at) })),
    {
      title,
      yLabel: "GFLOP/s",
      higherIsBetter: true,
      xLabel: "seconds since the layer's search began",
      references,
    },
  );
}

/** cuDNN's algorithm in two words, from its kernel's name. */
function algorithmOf(kernel: string | undefined): string {
  const k = (kernel ?? "").toLowerCase();
  return k.includes("winograd")
    ? "Winograd"
    : k.includes("fft")
      ? "FFT"
      : k.includes("implicit_gemm") || k.includes("implicit_convolve")
        ? "implicit GEMM"
        : k.includes("gemm")
          ? "GEMM"
          : kernel
            ? kernel.slice(0, 24)
            : "best algorithm";
}

function printTable(rs: readonly LayerReport[]): void {
  console.log(
    "\n" +
      formatTable(
        ["layer", "best tuned", "µs", "GFLOP/s", "cuDNN µs", "cuDNN GFLOP/s", "tuned ÷ cuDNN", "candidates", "invalid before upload", "wall s"],
        rs.map((r) => {
          const best = [r.best.direct, r.best.winograd].filter((b) => b !== undefined).sort((a, b) => b.gflops - a.gflops)[0];
          const which = best === r.best.direct ? "direct" : "winograd";
          const invalid = (r.outcomes.INVALID_CONFIG ?? 0) + r.droppedBeforeCompile;
          return [
            r.layer,
            best ? which : "—",
            best ? best.us.toFixed(2) : "—",
            best ? best.gflops.toFixed(0) : "—",
            r.cudnn ? r.cudnn.us.toFixed(2) : "—",
            r.cudnn ? r.cudnn.gflops.toFixed(0) : "—",
            best && r.cudnn ? `${(best.gflops / r.cudnn.gflops).toFixed(2)}×` : "—",
            r.candidates,
            `${invalid} of ${r.candidates + r.droppedBeforeCompile}`,
            r.seconds.toFixed(1),
          ];
        }),
      ),
  );
  if (existsSync(resultsFile)) console.log(`results: ${resultsFile}; plots: ${outDir}/conv2d-LAYER-{candidates,seconds}.svg`);
}
