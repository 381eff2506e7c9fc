/**
 * Auto-tuning a CUDA SGEMM on the farm's GPUs: the tile knobs of
 * examples/lib/cuda-gemm-template.ts (block tile BM×BN×BK, warp and thread
 * tiles, one or two shared buffers, registers per thread, padding), proposed
 * one at a time as results arrive by a cost model trained on what was
 * measured (`--search model`, the default) or by random draws then mutations
 * of the best (`--search evolution`). Configurations that cannot work (too many threads, too much shared
 * memory, tiles that do not divide the problem) are dropped before anything
 * is compiled; the rest are compiled by nvcc on this host, many at a time, ahead
 * of the boards, and measured as a pipeline (examples/lib/tune-loop.ts) on
 * every CUDA board of the key. The operands are generated on the boards from a seed (no input crosses the network) and each candidate is
 * checked against a host reference at the real size, computed once, exactly
 * (integer-valued operands: see gemmOperands). A naive
 * one-thread-per-element kernel is measured too, as the baseline; --baseline
 * (the JSON of examples/cudnn-baseline.py, run on the same GPU) adds cuBLAS to
 * the summary and the plot. Metric: GFLOP/s from the median time.
 *
 *   node --import tsx examples/tune-cuda-gemm.ts --tracker HOST:PORT [--key cuda]
 *        [--candidates 64] [--size 1024] [--search model|evolution] [--seed 1] [--arch sm_90] [--baseline cublas.json] [--out DIR]
 *        [--boards N] [--compile-jobs N] [--queue-depth N] [--in-flight N] [--stop-at GFLOPS]
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
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
  type KernelResources,
  type MeasureResult,
} from "kernelfarm";
import { TUNING_OPTIONS, numberArg, pipelineArgs, searchArg } from "./lib/args.ts";
import {
  GEMM_FUNCTION,
  GEMM_SPACE,
  NAIVE_GEMM_SOURCE,
  compileGemm,
  gemmConfigProblem,
  gemmFlops,
  gemmLaunch,
  gemmOperands,
  gemmSource,
  gemmThreads,
  gemmWarpTile,
  hostGemmParallel,
  naiveGemmLaunch,
  type GemmConfig,
  type GemmProblem,
} from "./lib/cuda-gemm-template.ts";
import { boardsOf, exitWithFarmError } from "./lib/boards.ts";
import { writeBestSoFarSvg } from "./lib/plot.ts";
import { Searcher, configKey, outcomeLine, formatTable, ranked, spaceSize, type KnobSpace } from "./lib/search.ts";
import { tuneArms } from "./lib/tune-loop.ts";

const USAGE =
  "usage: node --import tsx examples/tune-cuda-gemm.ts --tracker HOST:PORT [--key cuda] [--candidates 64] [--size 1024] [--search model|evolution] [--seed 1] [--arch sm_90] [--baseline cublas.json] [--out DIR] [--boards N] [--compile-jobs N] [--queue-depth N] [--in-flight N] [--stop-at GFLOPS]";
const { values: args } = parseArgs({
  options: {
    tracker: { type: "string" },
    key: { type: "string", default: "cuda" },
    candidates: { type: "string", default: "64" },
    size: { type: "string", default: "1024" },
    ...TUNING_OPTIONS,
    "stop-at": { type: "string" },
    seed: { type: "string", default: "1" },
    arch: { type: "string", default: "sm_90" },
    baseline: { type: "string" },
    out: { type: "string" },
  },
});
if (!args.tracker) {
  console.error(`${USAGE}\n--tracker is required: CUDA boards need a GPU, and this script starts no farm of its own`);
  process.exit(2);
}

const total = numberArg("candidates", args.candidates, 1);
const size = numberArg("size", args.size, 16);
const seed = numberArg("seed", args.seed, 0);
const strategy = searchArg(args.search);
const stopAt = args["stop-at"] === undefined ? undefined : numberArg("stop-at", args["stop-at"], 0, false);
const outDir = resolve(args.out ?? mkdtempSync(join(tmpdir(), "kfarm-tune-cuda-")));
mkdirSync(outDir, { recursive: true });
const resultsFile = join(outDir, "tune-cuda-gemm.jsonl");
const svgFile = join(outDir, "tune-cuda-gemm.svg");
const summaryFile = join(outDir, "tune-cuda-gemm-summary.json");
const problem: GemmProblem = { m: size, n: size, k: size };
const NAIVE_ID = "naive";
/** cuBLAS at this size (examples/cudnn-baseline.py's `sgemm`), if given. */
const cublas: { us: number; gflops: number; kernels?: string[] } | undefined = args.baseline
  ? JSON.parse(readFileSync(args.baseline, "utf8")).sgemm?.[String(size)]
  : undefined;
if (args.baseline && !cublas)
  console.warn(`${args.baseline} has no cuBLAS figure for ${size}³ (run examples/cudnn-baseline.py --gemm ${size}); going on without it`);

// Operands generated on the boards; the reference on the host, once, when the first candidate needs it.
const operands = gemmOperands(problem, seed);
let referenceS = 0;
const reference = async ([a, b]: AnyTypedArray[]) => {
  const t0 = Date.now();
  const c = await hostGemmParallel(a as Float32Array, b as Float32Array, problem);
  referenceS = (Date.now() - t0) / 1e3;
  return [c];
};
console.log(`GEMM ${size}×${size}×${size} float32 (${(gemmFlops(problem) / 1e9).toFixed(2)} GFLOP), operands seeded ${seed} on the boards`);

/** What ptxas reported for each compiled configuration, by candidate id. */
const resources = new Map<string, KernelResources>();

function candidate(id: string, config: GemmConfig | "naive"): Candidate {
  return {
    id,
    // What defines the module (the knobs set compile options too): a resume matches it without compiling.
    definition: { source: config === "naive" ? NAIVE_GEMM_SOURCE : gemmSource(config), config, arch: args.arch },
    module: async () => {
      const m = await compileGemm(config, { arch: args.arch! });
      resources.set(id, m.resources[GEMM_FUNCTION]!);
      return m;
    },
    function: GEMM_FUNCTION,
    reference,
    args: [...operands, { output: { shape: [problem.m, problem.n], dtype: "float32" } }, { scalar: problem.m }, { scalar: problem.n }, { scalar: problem.k }],
    launch: config === "naive" ? naiveGemmLaunch(problem) : gemmLaunch(config, problem),
  };
}

const gflops = (r: MeasureResult | undefined) => (r?.outcome === "OK" && r.timing ? gemmFlops(problem) / r.timing.median / 1e9 : NaN);

const client = await connectTracker(args.tracker);
let exitCode = 0;
try {
  const boards = await boardsOf(client, args.key!, { kinds: ["cuda"] }).catch(exitWithFarmError);
  console.log(
    `${spaceSize(GEMM_SPACE).toLocaleString("en-US")} configurations in the space; measuring ${total} (and the naive baseline) on ${boards.length} board(s): ${boards.map((x) => x.id).join(", ")}`,
  );
  const t = Date.now();
  // One Measurer for the whole search: each board's session (and the reference) lasts from the baseline to the last candidate.
  const measurer = new Measurer(client, {
    key: args.key!,
    timeEvaluator: { number: 10, repeat: 5, minRepeatMs: 10 },
    timeoutMs: 20_000,
    resultsFile,
    ...pipelineArgs(args),
  });
  // randomFirst 32: the evolution strategy draws at random for as long as the old rounds did (2 rounds of 16).
  const searcher = new Searcher({
    space: GEMM_SPACE,
    seed,
    strategy,
    randomFirst: 32,
    higherIsBetter: true,
    valid: (c) => gemmConfigProblem(c, problem) === undefined,
  });
  let run;
  const results = new Map<string, MeasureResult>();
  try {
    for (const r of await measurer.measure([candidate(NAIVE_ID, "naive")])) results.set(r.id, r);
    run = await tuneArms(
      measurer,
      [{ name: "tiles", searcher: searcher as unknown as Searcher<KnobSpace>, candidate: (c) => candidate(configKey(c), c as GemmConfig) }],
      {
        total,
        score: gflops,
        higherIsBetter: true,
        stopAt,
        logEvery: 16,
        log: (l) => console.log(l),
      },
    );
  } finally {
    await measurer.close();
  }
  for (const r of run.results) results.set(r.id, r);
  const trials = searcher.trials;
  const rejected = run.rejected;
  const seconds = (Date.now() - t) / 1e3;
  console.log(formatReport(run.report));

  const naive = gflops(results.get(NAIVE_ID));
  const top = ranked(trials, true).slice(0, 10);
  console.log(
    `\nbest configurations (of ${trials.filter((x) => !Number.isNaN(x.score)).length} OK; naive baseline ${Number.isNaN(naive) ? "not OK" : `${naive.toFixed(0)} GFLOP/s`}):`,
  );
  if (top.length === 0) console.log("  (none)");
  else {
    console.log(
      formatTable(
        ["#", "BM", "BN", "BK", "TM", "TN", "warp", "buffers", "min blocks", "pad", "threads", "regs", "spill B", "µs", "GFLOP/s", "vs naive", "found by"],
        top.map((x, i) => {
          const id = configKey(x.config);
          const res = resources.get(id);
          const r = results.get(id)!;
          return [
            i + 1,
            x.config.BM,
            x.config.BN,
            x.config.BK,
            x.config.TM,
            x.config.TN,
            gemmWarpTile(x.config).join("×"),
            x.config.buffers,
            x.config.min_blocks,
            x.config.pad,
            gemmThreads(x.config),
            res?.registers ?? "?",
            res ? res.spillStoreBytes + res.spillLoadBytes : "?",
            (r.timing!.median * 1e6).toFixed(1),
            x.score.toFixed(0),
            Number.isNaN(naive) ? "—" : `${(x.score / naive).toFixed(1)}×`,
            `${x.origin} (#${trials.indexOf(x) + 1})`,
          ];
        }),
      ),
    );
  }
  const all = [...trials.map((x) => results.get(configKey(x.config))!), ...(results.has(NAIVE_ID) ? [results.get(NAIVE_ID)!] : [])];
  const outcomes = all.map((r) => r.outcome);
  const best = top[0];
  if (best) {
    const r = results.get(configKey(best.config))!;
    const on = [r.conditions?.name, r.conditions?.sm_clock_mhz && `SM clock ${r.conditions.sm_clock_mhz} MHz`].filter(Boolean).join(", ");
    console.log(`\nbest ${best.score.toFixed(0)} GFLOP/s (${configKey(best.config)}), on ${r.board}${on ? ` (${on})` : ""}`);
    if (cublas)
      console.log(`cuBLAS ${cublas.gflops.toFixed(0)} GFLOP/s (${cublas.us.toFixed(1)} µs): tuned ÷ cuBLAS = ${(best.score / cublas.gflops).toFixed(2)}×`);
  }
  console.log(
    `outcomes: ${countLine(outcomes)} (${all.length} candidates in ${seconds.toFixed(1)} s, the host reference computed once in it: ${referenceS.toFixed(1)} s; ${rejected} invalid configurations dropped before compiling)`,
  );
  for (const r of all.filter((r) => r.outcome !== "OK").slice(0, 3)) console.log(`  ${r.outcome} ${r.id}: ${r.message?.split("\n")[0]}`);

  const gpu = all.find((r) => r.conditions?.name)?.conditions?.name ?? boards[0]!.id;
  const series = [{ label: "tuned", values: run.points.map((x) => x.score) }];
  if (!Number.isNaN(naive)) series.push({ label: "naive kernel", values: run.points.map(() => naive) });
  writeFileSync(
    summaryFile,
    `${JSON.stringify({ gpu, size, seed, search: strategy, boards: boards.map((b) => b.id), seconds, best: best && { gflops: best.score, config: configKey(best.config) }, naive, cublas, farm: run.report, curve: run.points.map((x) => ({ gflops: x.score, at: x.at })) }, null, 1)}\n`,
  );
  writeBestSoFarSvg(svgFile, series, {
    title: `CUDA SGEMM ${size}³ on ${gpu}${boards.length > 1 ? ` (${boards.length} boards)` : ""}: tile search (${strategy === "model" ? "cost model" : "random, then evolutionary"})`,
    yLabel: "GFLOP/s",
    higherIsBetter: true,
    ...(cublas ? { references: [{ label: "cuBLAS", value: cublas.gflops }] } : {}),
  });
  console.log(`results: ${resultsFile}\nplot:    ${svgFile}\nsummary: ${summaryFile}`);

  const wrong = outcomes.filter((o) => o === "WRONG_ANSWER").length;
  if (!best) {
    console.error("no configuration was OK");
    exitCode = 1;
  }
  if (wrong > 0) {
    console.error(`${wrong} candidates computed a wrong answer`);
    exitCode = 1;
  }
} finally {
  client.close();
}
process.exitCode = exitCode;

function countLine(outcomes: readonly string[]): string {
  return outcomeLine(outcomes, MEASURE_OUTCOMES);
}
