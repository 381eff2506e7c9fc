/**
 * Timing fidelity on a CUDA board: each workload of bench/cuda/workloads.ts
 * timed by the farm (`timeEvaluator` through tracker, agent and worker) and by
 * the native harness (bench/cuda/native-timer.c: the same module file, the
 * same launch, CUDA events in a small C program), alternating so both see the
 * same clocks. Shared by `npm run bench -- cuda` and the GPU test suite.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readFileSync } from "node:fs";
import { decodeBundle } from "../../protos/index.ts";
import { compileCuda, type CallArg, type CudaCompiledModule, type Session, type TrackerClient } from "../../host-sdk/index.ts";
import { KERNELS_CU, WORKLOADS, type CudaWorkload } from "../cuda/workloads.ts";
import { buildNativeTimer, runNativeTimer, type NativeArg } from "./native-cuda.ts";
import { median } from "./stats.ts";

/** Each repeat lasts about this long, so event resolution (≈0.5 µs) is far below 1 %. */
const REPEAT_MS = 20;
export const REPEATS = 10;
/** Native, farm, native, farm, ...: drift in clocks shows in both (conv2d alone moves ~0.8 % between runs). */
export const ROUNDS = 4;
/** A GPU worker starts in about 0.7 s on an H100 host (BENCHMARKS.md). */
const SUCCESSOR_START_MS = 2000;
/** Kernels this short are also timed as a CUDA graph replay. */
const GRAPH_BELOW_US = 10;

export interface FidelityRow {
  workload: CudaWorkload;
  number: number;
  farmUs: number;
  nativeUs: number;
  /** farm / native medians. */
  ratio: number;
  /** For kernels under 10 µs: the farm's median with `graph: true` (launch overhead out of the loop). */
  farmGraphUs?: number;
  /** Board conditions the farm reported with its last result (name, clocks). */
  conditions: Readonly<Record<string, string>>;
  device: string;
}

export interface FidelityRun {
  rows: FidelityRow[];
  module: CudaCompiledModule;
  /** Where the native timer and the module file live; removed by `dispose`. */
  dispose(): Promise<void>;
  nativeTimer: string;
  moduleFile: string;
}

/** Compiles kernels.cu for `arch`, declaring every workload kernel with a call-time launch. */
export async function compileWorkloads(arch: string): Promise<CudaCompiledModule> {
  const functions: Record<string, string[]> = {};
  for (const w of WORKLOADS) functions[w.kernel] = w.params;
  return compileCuda(readFileSync(KERNELS_CU, "utf8"), { arch, functions, fileName: "kernels.cu" });
}

function launches(w: CudaWorkload): number {
  return Math.max(1, Math.round((REPEAT_MS * 1000) / w.expectUs));
}

/** Allocates the workload's arguments on the board, buffers filled as the native harness fills them. */
async function farmArgs(s: Session, w: CudaWorkload): Promise<CallArg[]> {
  const args: CallArg[] = [];
  for (const a of w.args) {
    if ("buf" in a) args.push(await s.array(new Float32Array(a.buf / 4).fill(a.fill ?? 1)));
    else args.push("i32" in a ? a.i32 : a.f32);
  }
  return args;
}

export async function measureFidelity(client: TrackerClient, key: string, opts: { log?: (line: string) => void } = {}): Promise<FidelityRun> {
  const board = (await client.summary()).boards.find((b) => b.key === key);
  if (!board) throw new Error(`no board of key ${key}`);
  const arch = board.labels.arch!;
  const dir = await mkdtemp(join(tmpdir(), "kfarm-fidelity-"));
  const [module, nativeTimer] = await Promise.all([compileWorkloads(arch), buildNativeTimer(dir)]);
  const moduleFile = join(dir, `kernels.${decodeBundle(module.bytes).targetDetails.format}`);
  await writeFile(moduleFile, decodeBundle(module.bytes).binary);
  const rows: FidelityRow[] = [];
  const s = await client.request(key, { deadlineMs: 60_000, sessionTimeoutMs: 30 * 60_000 });
  try {
    await s.upload(module);
    const m = await s.loadModule(module.name);
    // Loading a module taints the worker, so the pool starts its successor now; let it
    // create its CUDA context before anything is timed.
    await new Promise((r) => setTimeout(r, SUCCESSOR_START_MS));
    for (const w of WORKLOADS) {
      const number = launches(w);
      const args = await farmArgs(s, w);
      const launch = { grid: w.grid, block: w.block, sharedMemBytes: w.sharedMemBytes };
      const evaluate = m.timeEvaluator(w.kernel, { number, repeat: REPEATS, launch, timeoutMs: 300_000 });
      const farm: number[] = [];
      const native: number[] = [];
      let conditions: Readonly<Record<string, string>> = {};
      let device = "";
      for (let r = 0; r < ROUNDS; r++) {
        const n = await runNativeTimer(nativeTimer, {
          module: moduleFile,
          kernel: w.kernel,
          grid: w.grid,
          block: w.block,
          sharedMemBytes: w.sharedMemBytes,
          args: w.args as NativeArg[],
          number,
          repeat: REPEATS,
        });
        native.push(...n.resultsMs.map((ms) => ms * 1000));
        device = n.device;
        const f = await evaluate(...args);
        farm.push(...f.results.map((sec) => sec * 1e6));
        conditions = f.conditions;
      }
      let farmGraphUs: number | undefined;
      if (w.expectUs < GRAPH_BELOW_US) {
        const g = await m.timeEvaluator(w.kernel, { number, repeat: REPEATS, launch, graph: true, timeoutMs: 300_000 })(...args);
        farmGraphUs = median(g.results.map((sec) => sec * 1e6));
      }
      for (const a of args) if (typeof a === "object") await a.free();
      const row = {
        workload: w,
        number,
        farmUs: median(farm),
        nativeUs: median(native),
        ratio: median(farm) / median(native),
        farmGraphUs,
        conditions,
        device,
      };
      opts.log?.(`${w.name}: farm ${row.farmUs.toFixed(2)} µs, native ${row.nativeUs.toFixed(2)} µs, ratio ${row.ratio.toFixed(4)} (number ${number})`);
      rows.push(row);
    }
  } finally {
    await s.close();
  }
  return { rows, module, nativeTimer, moduleFile, dispose: () => rm(dir, { recursive: true, force: true }) };
}
