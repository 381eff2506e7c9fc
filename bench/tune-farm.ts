/**
 * Tuning at farm scale on a GPU host (issue 28), from the agent bundle:
 *
 *   ./bench tune-scaling   the seed-004 conv2d layer (7×7×512, 256 candidates, seed 1) with 1, 2 and 4
 *                          boards of one key, each run with a cold compile cache, then again with the
 *                          cache it left (the farm without the host's compiler as the limit): seconds,
 *                          candidates/s, speedup over 1 board, busy fraction, where the boards' idle time went
 *   ./bench tune-model     the cost model against today's search (random, then mutations): per seed,
 *                          the candidates each needs to come within 2 % of the best that
 *                          TUNE_CANDIDATES (200) of today's search find, on seed 004's layer and SGEMM 4096
 *
 * Both run examples/tune-cuda-conv2d.ts and examples/tune-cuda-gemm.ts as a user would, against a
 * tracker and one agent holding every GPU of the host (cuda:0…, key cuda), and read the summaries the
 * examples write. Environment: TUNE_BOARDS (1,2,4), TUNE_LAYER (7x7x512), TUNE_CANDIDATES (256 for
 * scaling, 200 for the model), TUNE_SEEDS (1,2,3), TUNE_PROBLEMS (conv2d,sgemm), TUNE_OUT (a folder
 * for the runs' output and the plots; default a temporary one), TUNE_CACHES (cold,warm), TUNE_ARGS (more
 * options for the example, e.g. "--search evolution"), TUNE_CPU_PROF=1 (a CPU profile of each run's
 * tuning process). Without a GPU, says so and skips.
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { MeasureReport } from "../host-sdk/index.ts";
import { writeBestSoFarSvg } from "../examples/lib/plot.ts";
import { formatTable } from "../examples/lib/search.ts";
import { candidatesToReach } from "../examples/lib/tune-loop.ts";
import { startFarm } from "../tests/helpers/processes.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const env = (name: string, fallback: string) => process.env[name] ?? fallback;
const list = (s: string) =>
  s
    .split(",")
    .map((x) => x.trim())
    .filter(Boolean);

function gpuCount(): number {
  try {
    return execFileSync("nvidia-smi", ["-L"], { encoding: "utf8" })
      .split("\n")
      .filter((l) => l.startsWith("GPU ")).length;
  } catch {
    return 0;
  }
}

/** Runs one tuning example to its end and returns its summary JSON; `cache`: its compile cache (default a fresh, cold one). */
async function runExample(
  script: string,
  argv: string[],
  outDir: string,
  summaryName: string,
  cache = mkdtempSync(join(tmpdir(), "kfarm-tune-cache-")),
): Promise<Record<string, unknown>> {
  mkdirSync(outDir, { recursive: true });
  // TUNE_CPU_PROF=1: a CPU profile of the tuning script's own process, in its output folder.
  const prof = process.env.TUNE_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${outDir}`] : [];
  const child = spawn(process.execPath, [...prof, "--import", "tsx", join(ROOT, "examples", script), ...argv, "--out", outDir], {
    cwd: ROOT,
    env: { ...process.env, KFARM_CACHE_DIR: cache, KFARM_LOG: "warn" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
  if (code !== 0) throw new Error(`${script} ${argv.join(" ")} exited ${code}:\n${out.slice(-3000)}`);
  return JSON.parse(readFileSync(join(outDir, summaryName), "utf8")) as Record<string, unknown>;
}

interface Farm {
  address: string;
  gpus: number;
  stop(): Promise<void>;
}

async function gpuFarm(): Promise<Farm | undefined> {
  const gpus = gpuCount();
  if (gpus === 0) {
    console.log("\ntune: skipped: no NVIDIA GPU here (nvidia-smi -L lists none)");
    return undefined;
  }
  const farm = await startFarm(Array.from({ length: gpus }, (_, i) => `cuda:${i}:key=cuda`));
  return { address: farm.tracker.address, gpus, stop: () => farm.stop() };
}

const outRoot = () => env("TUNE_OUT", mkdtempSync(join(tmpdir(), "kfarm-tune-bench-")));

export async function benchTuneScaling(): Promise<void> {
  const farm = await gpuFarm();
  if (!farm) return;
  const out = outRoot();
  const layer = env("TUNE_LAYER", "7x7x512");
  const candidates = env("TUNE_CANDIDATES", "256");
  const boards = list(env("TUNE_BOARDS", "1,2,4"))
    .map(Number)
    .filter((n) => n <= farm.gpus);
  const rows: (string | number)[][] = [];
  const firstRate: Record<string, number> = {};
  try {
    // Cold: every compile cache empty. Warm: again with the cache the cold run left (same seed, so mostly the same
    // candidates): what the farm does when the host's compiler is not the limit.
    for (const cache of list(env("TUNE_CACHES", "cold,warm")) as ("cold" | "warm")[]) {
      for (const n of boards) {
        const dir = join(out, `scaling-${n}`);
        const cacheDir = join(dir, "cache");
        if (cache === "cold") mkdirSync(cacheDir, { recursive: true });
        const argv = [
          "--tracker",
          farm.address,
          "--layers",
          layer,
          "--candidates",
          candidates,
          "--seed",
          "1",
          "--boards",
          String(n),
          ...(process.env.TUNE_ARGS ?? "").split(" ").filter(Boolean),
        ];
        const s = await runExample("tune-cuda-conv2d.ts", argv, join(dir, cache), "tune-cuda-conv2d-summary.json", cacheDir);
        const l = (s.layers as { farm: MeasureReport; best: Record<string, { us: number }>; hostCpuSeconds: number }[])[0]!;
        const r = l.farm;
        const rate = r.candidatesPerSecond;
        firstRate[cache] ??= rate;
        const one = firstRate[cache]!;
        const idle = (k: keyof MeasureReport["boards"][number]["idle"]) => (r.boards.reduce((a, b) => a + b.idle[k], 0) / r.boards.length).toFixed(1);
        const best = Math.min(...Object.values(l.best).map((b) => b.us));
        rows.push([
          cache,
          n,
          r.seconds.toFixed(1),
          rate.toFixed(2),
          `${(rate / one).toFixed(2)}×`,
          `${((100 * rate) / one / n).toFixed(0)} %`,
          `${(100 * r.busy).toFixed(0)} %`,
          idle("compile"),
          idle("host"),
          idle("transfer"),
          idle("session"),
          idle("tail"),
          `${r.compiles.medianSeconds.toFixed(2)} / ${r.compiles.maxSeconds.toFixed(2)}`,
          `${(r.compileParallelism / Math.max(r.compiles.medianSeconds, 1e-3)).toFixed(1)}`,
          r.queueDepth,
          `${((100 * l.hostCpuSeconds) / r.seconds).toFixed(0)} %`,
          best.toFixed(2),
        ]);
        console.error(`tune-scaling: ${cache}, ${n} board(s) done`);
      }
    }
  } finally {
    await farm.stop();
  }
  console.log(
    `\nTuning at farm scale: conv2d ${layer}, ${candidates} candidates, seed 1, cold then warm compile caches; ${farm.gpus} GPU(s) on this host; output in ${out}`,
  );
  console.log(
    formatTable(
      [
        "caches",
        "boards",
        "seconds",
        "candidates/s",
        "speedup",
        "efficiency",
        "busy",
        "idle compile s",
        "host s",
        "transfer s",
        "session s",
        "tail s",
        "compile p50/max s",
        "host compile capacity/s",
        "queue depth",
        "host CPU",
        "best µs",
      ],
      rows,
    ),
  );
  console.log(
    "target: ≥ 3.5× on 4 boards (≥ 88 % efficiency). idle columns: seconds per board, mean over the boards; host compile capacity: compile slots ÷ median compile seconds.",
  );
}

interface Curve {
  score: number;
  at: number;
}

export async function benchTuneModel(): Promise<void> {
  const farm = await gpuFarm();
  if (!farm) return;
  const out = outRoot();
  const seeds = list(env("TUNE_SEEDS", "1,2,3")).map(Number);
  const candidates = env("TUNE_CANDIDATES", "200");
  const problems = list(env("TUNE_PROBLEMS", "conv2d,sgemm"));
  const rows: (string | number)[][] = [];
  try {
    for (const problem of problems) {
      const reach: { evolution: number[]; model: number[] } = { evolution: [], model: [] };
      const curves: Record<string, Curve[]> = {};
      for (const seed of seeds) {
        const run = async (search: string, stopAt?: number): Promise<{ curve: Curve[]; seconds: number }> => {
          const dir = join(out, `model-${problem}-${search}-${seed}`);
          const common = [
            "--tracker",
            farm.address,
            "--candidates",
            candidates,
            "--seed",
            String(seed),
            "--search",
            search,
            ...(stopAt ? ["--stop-at", stopAt.toFixed(1)] : []),
          ];
          if (problem === "conv2d") {
            const s = await runExample("tune-cuda-conv2d.ts", [...common, "--layers", env("TUNE_LAYER", "7x7x512")], dir, "tune-cuda-conv2d-summary.json");
            const l = (s.layers as { seconds: number; curve: { gflops: number; at: number }[] }[])[0]!;
            return { curve: l.curve.map((c) => ({ score: c.gflops, at: c.at })), seconds: l.seconds };
          }
          const s = await runExample("tune-cuda-gemm.ts", [...common, "--size", env("TUNE_GEMM_SIZE", "4096")], dir, "tune-cuda-gemm-summary.json");
          return { curve: (s.curve as { gflops: number; at: number }[]).map((c) => ({ score: c.gflops, at: c.at })), seconds: s.seconds as number };
        };
        const evo = await run("evolution");
        const best = Math.max(...evo.curve.map((c) => c.score).filter((x) => !Number.isNaN(x)));
        const target = 0.98 * best;
        const model = await run("model", target);
        const nEvo = candidatesToReach(evo.curve, target, true)!;
        const nModel = candidatesToReach(model.curve, target, true);
        reach.evolution.push(nEvo);
        reach.model.push(nModel ?? Infinity);
        curves[`evolution, seed ${seed}`] = evo.curve;
        curves[`model, seed ${seed}`] = model.curve;
        rows.push([
          problem,
          seed,
          best.toFixed(0),
          target.toFixed(0),
          nEvo,
          nModel ?? `not in ${model.curve.length}`,
          evo.seconds.toFixed(1),
          model.seconds.toFixed(1),
        ]);
        console.error(`tune-model: ${problem} seed ${seed} done`);
      }
      const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
      rows.push([
        problem,
        "median",
        "",
        "",
        median(reach.evolution),
        median(reach.model),
        "",
        `model ÷ ${candidates}: ${(median(reach.model) / Number(candidates)).toFixed(2)}`,
      ]);
      for (const [x, label] of [
        ["candidates", "candidates measured"],
        ["seconds", "seconds since the search began"],
      ] as const) {
        const series = Object.entries(curves).map(([name, c]) => ({
          label: name,
          values: c.map((p) => p.score),
          x: c.map((p, i) => (x === "candidates" ? i + 1 : p.at)),
        }));
        writeBestSoFarSvg(join(out, `model-${problem}-${x}.svg`), series, {
          title: `${problem}: the cost model against today's search, best-so-far`,
          yLabel: "GFLOP/s",
          higherIsBetter: true,
          xLabel: label,
        });
      }
    }
  } finally {
    await farm.stop();
  }
  console.log(
    `\nA search that learns: candidates to come within 2 % of the best of ${candidates} candidates of today's search (random, then mutations); ${farm.gpus} board(s); output and plots in ${out}`,
  );
  console.log(formatTable(["problem", "seed", "today's best GFLOP/s", "target", "today's search needs", "cost model needs", "today's s", "model s"], rows));
  console.log(`target: the cost model needs ≤ ⅓ of the candidates (median over the seeds).`);
}
