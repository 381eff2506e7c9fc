/**
 * Benchmark: measure() as the measurement service of an auto-tuner.
 *
 * 1. Overhead per candidate beyond the board's own measuring time, 1 board,
 *    cheap kernels (a 256-element vadd on a `cpu` board, a 1×16·16×16
 *    vtaMatmul on a `vta-sim` board): candidates sharing one module (one
 *    upload per session) and each with its own module (upload + load each).
 *    Baseline: the round trips measure() makes per candidate, each priced at
 *    the same session's small-request round trip (stats()), same run.
 * 2. Scaling: candidates per second with 1, 4 and 16 `vta-sim` boards (one
 *    agent) on candidates of fixed simulated cost (64×512·512×512 matmul,
 *    ~40 ms of board time each). Baselines: linear in the 1-board rate, and
 *    the best this machine can do — the same board work run directly (the
 *    board backend in plain processes, no farm) in 1 and in 2 processes.
 * 3. Against one session per candidate (request → upload → load → run/time →
 *    close, MetaSchedule's runner): same boards, same candidates, same run.
 *
 *   npm run bench -- measure
 */
import { fork } from "node:child_process";
import { readFileSync } from "node:fs";
import { availableParallelism, cpus } from "node:os";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { VtaSimBackend } from "../device-agent/backends/vta-sim/index.ts";
import {
  Measurer,
  compileCpu,
  measure,
  unpackMatmulOutput,
  vtaMatmul,
  type Candidate,
  type CompiledModule,
  type MeasureResult,
  type RemoteArray,
  type TimeEvaluatorOptions,
  type TrackerClient,
  type VtaMatmulWorkload,
} from "../host-sdk/index.ts";
import { decodeBundle, type AnyTypedArray } from "../protos/index.ts";
import { startFarm, waitForFreeBoards } from "../tests/helpers/processes.ts";
import { VADD_SOURCE } from "../tests/helpers/kernels.ts";
import { matmulCase } from "../tests/helpers/vta.ts";
import { childrenOf, cpuSeconds, loadAverage, selfCpuSeconds, settleProcesses } from "./lib/procs.ts";
import { fmtMs, fmtRatio, nowMs, percentile, printTable, verdict, type Row } from "./lib/stats.ts";

export const TARGET_OVERHEAD_MS = 5;
export const TARGET_LINEAR = 0.9;

/** time_evaluator settings of the overhead candidates: measure()'s default. */
const CHEAP_TE = { number: 10, repeat: 3 } as const;
/** Candidates per overhead batch: sharing one module, and each with its own. */
const SHARED_CANDIDATES = 60;
const OWN_CANDIDATES = 24;
const CPU_N = 256;
const TINY_MATMUL: VtaMatmulWorkload = { batch: 1, inFeatures: 16, outFeatures: 16 };

/** Scaling: (1 warm-up + 8 × 3 timed + 2 checked) calls of ~1.5 ms ≈ 40 ms of board time per candidate. */
const HEAVY_MATMUL: VtaMatmulWorkload = { batch: 64, inFeatures: 512, outFeatures: 512 };
const HEAVY_TE = { number: 8, repeat: 3 } as const;
const BOARD_COUNTS = [1, 4, 16] as const;
/** Enough that every run lasts seconds, on 2 CPUs or 16 (session set-up is inside the timed batch). */
const HEAVY_CANDIDATES: Record<(typeof BOARD_COUNTS)[number], number> = { 1: 32, 4: 128, 16: 512 };
/** Direct baseline processes: one per board at most, one per CPU at most. */
/** The search comparison: the module-each cpu candidates as this many batches. */
const SEARCH_GENERATIONS = 4;
/** Scaling runs: 1, 4 and 16 boards in turn, this many times. */
const SCALING_ROUNDS = 3;
const DIRECT_PROCESSES = Math.min(BOARD_COUNTS[BOARD_COUNTS.length - 1]!, availableParallelism());
/** Board counts the one-session-per-candidate pattern runs the heavy candidates on. */
const SESSION_BOARD_COUNTS = [1, 16] as const;
/** cpu boards: each such session boots a worker process (~1 CPU-s here), so only the first few candidates. */
const CPU_SESSION_CANDIDATES = 8;

/** Small-request round trips: the floor of a candidate's cost, which is one round trip (its inputs and the Measure request, sent together). */
const RTT_WARMUP = 30;
const RTT_RUNS = 300;

/** Calls the board makes per candidate besides the timed ones: time_evaluator's warm-up and the two checks. */
const UNTIMED_CALLS = 3;

const POISON = 0xa5;

// ---------------------------------------------------------------- candidates

interface Batch {
  label: string;
  key: string;
  candidates: Candidate[];
  te: Omit<TimeEvaluatorOptions, "launch" | "timeoutMs">;
  /** Distinct modules in the batch (1 when shared). */
  modules: number;
}

/** A vadd module; `tag` makes the source, and so the bundle, distinct. */
function compileVaddModule(tag: string): Promise<CompiledModule> {
  return compileCpu(`${VADD_SOURCE}\n/* candidate ${tag} */\n`, {
    functions: { vadd: ["float32* a", "float32* b", "float32* c", "int32 n"], scale: ["float32* a", "int32 n", "float32 s"], nop: [] },
  });
}

async function cpuBatches(): Promise<{ shared: Batch; own: Batch }> {
  const a = Float32Array.from({ length: CPU_N }, (_, i) => i);
  const b = Float32Array.from({ length: CPU_N }, (_, i) => 0.25 * i);
  const want = Float32Array.from({ length: CPU_N }, (_, i) => 1.25 * i);
  const cand = (module: CompiledModule, id: string): Candidate => ({
    id,
    module,
    function: "vadd",
    args: [{ input: a }, { input: b }, { output: { shape: [CPU_N], dtype: "float32" }, expect: want }, { scalar: CPU_N }],
  });
  const shared = await compileVaddModule("shared");
  // Compiled before the timed region (cc takes 50–200 ms each here): the figure is the farm's, not the compiler's.
  const own: CompiledModule[] = [];
  for (let i = 0; i < OWN_CANDIDATES; i += 2) own.push(...(await Promise.all([compileVaddModule(`own${i}`), compileVaddModule(`own${i + 1}`)])));
  return {
    shared: {
      label: "cpu, shared module",
      key: "cpu",
      te: CHEAP_TE,
      modules: 1,
      candidates: Array.from({ length: SHARED_CANDIDATES }, (_, i) => cand(shared, `s${i}`)),
    },
    own: {
      label: "cpu, own module each",
      key: "cpu",
      te: CHEAP_TE,
      modules: OWN_CANDIDATES,
      candidates: own.slice(0, OWN_CANDIDATES).map((m, i) => cand(m, `o${i}`)),
    },
  };
}

/** The packed output the board must write, from an in-process run, checked against the plain reference. */
function matmulExpect(module: CompiledModule, w: VtaMatmulWorkload, inputs: readonly Int8Array[]): Int8Array {
  const backend = new VtaSimBackend();
  const fn = [...backend.load(decodeBundle(module.bytes)).functions.values()][0]!;
  const arrays = [...inputs, new Int8Array(w.batch * w.outFeatures)].map((data) => {
    const array = backend.alloc(data.byteLength);
    array.write(0, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    return array;
  });
  backend.invoke(
    fn,
    arrays.map((array) => ({ kind: "buffer", array })),
  );
  const out = Int8Array.from(new Int8Array(arrays[2]!.read(0, w.batch * w.outFeatures).slice().buffer));
  const c = matmulCase(w, 1);
  const plain = unpackMatmulOutput(out, w.batch, w.outFeatures);
  if (plain.some((v, i) => v !== c.want[i]))
    throw new Error(`the simulated ${w.batch}×${w.inFeatures}·${w.inFeatures}×${w.outFeatures} matmul disagrees with the reference`);
  return out;
}

function matmulCandidates(w: VtaMatmulWorkload, modules: readonly CompiledModule[], count: number, prefix: string): Candidate[] {
  const c = matmulCase(w, 1);
  const expect = matmulExpect(modules[0]!, w, c.inputs);
  return Array.from({ length: count }, (_, i) => {
    const module = modules[i % modules.length]!;
    const [pa, pw, pc] = module.functions[0]!.params.map((p) => [...(p.shape ?? [])]);
    return {
      id: `${prefix}${i}`,
      module,
      function: module.functions[0]!.name,
      args: [
        { input: c.inputs[0], shape: pa },
        { input: c.inputs[1], shape: pw },
        { output: { shape: pc!, dtype: "int8" }, expect },
      ],
    };
  });
}

function vtaBatches(): { shared: Batch; own: Batch } {
  const shared = vtaMatmul(TINY_MATMUL);
  // A distinct function name per candidate: a distinct bundle, so measure() uploads and loads each.
  const own = Array.from({ length: OWN_CANDIDATES }, (_, i) => vtaMatmul(TINY_MATMUL, undefined, { name: `matmul_${i}` }));
  return {
    shared: {
      label: "vta-sim, shared module",
      key: "vta",
      te: CHEAP_TE,
      modules: 1,
      candidates: matmulCandidates(TINY_MATMUL, [shared], SHARED_CANDIDATES, "s"),
    },
    own: {
      label: "vta-sim, own module each",
      key: "vta",
      te: CHEAP_TE,
      modules: OWN_CANDIDATES,
      candidates: matmulCandidates(TINY_MATMUL, own, OWN_CANDIDATES, "o"),
    },
  };
}

// ---------------------------------------------------------------- CPU of the farm's processes

const CLOCK_TICKS = 100;

/** CPU seconds of a process's reaped children (cutime + cstime), so workers that exited still count. */
function reapedChildrenSeconds(pid: number): number {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
    return (Number(f[13]) + Number(f[14])) / CLOCK_TICKS;
  } catch {
    return 0;
  }
}

/** Busy and total CPU time of the whole machine so far, in seconds (from /proc/stat; steal counts as busy). */
function machineSeconds(): { busy: number; total: number } {
  const f = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = f.reduce((x, y) => x + y, 0);
  return { busy: (total - f[3]! - (f[4] ?? 0)) / CLOCK_TICKS, total: total / CLOCK_TICKS };
}

interface CpuSplit {
  host: number;
  tracker: number;
  agent: number;
  /** Session workers: live ones plus those that exited (via the agent's reaped-children time). */
  workers: number;
  /** CPU seconds of each worker alive at both ends. */
  perWorker: number[];
  /** Workers started during the stretch and alive at its end, and their CPU seconds (their boot). */
  started: number;
  startedCpu: number;
  /** CPU seconds every other process of the machine used meanwhile. */
  others: number;
  wallS: number;
}

function startCpuSplit(trackerPid: number, agentPid: number): () => CpuSplit {
  const live = () => new Map(childrenOf(agentPid).map((p) => [p, cpuSeconds(p)]));
  const m0 = machineSeconds();
  const at = nowMs();
  const h0 = selfCpuSeconds();
  const t0 = cpuSeconds(trackerPid);
  const a0 = cpuSeconds(agentPid);
  const r0 = reapedChildrenSeconds(agentPid);
  const w0 = live();
  return () => {
    const w1 = live();
    const m1 = machineSeconds();
    const sum = (m: Map<number, number>) => [...m.values()].reduce((x, y) => x + y, 0);
    const fresh = [...w1].filter(([p]) => !w0.has(p));
    const split = {
      host: selfCpuSeconds() - h0,
      tracker: cpuSeconds(trackerPid) - t0,
      agent: cpuSeconds(agentPid) - a0,
      workers: reapedChildrenSeconds(agentPid) - r0 + sum(w1) - sum(w0),
      perWorker: [...w1].filter(([p]) => w0.has(p)).map(([p, s]) => s - w0.get(p)!),
      started: fresh.length,
      startedCpu: fresh.reduce((x, [, s]) => x + s, 0),
      others: 0,
      wallS: (nowMs() - at) / 1e3,
    };
    split.others = Math.max(0, m1.busy - m0.busy - cpuTotal(split));
    return split;
  };
}

function cpuTotal(c: Pick<CpuSplit, "host" | "tracker" | "agent" | "workers">): number {
  return c.host + c.tracker + c.agent + c.workers;
}

function fmtSplit(c: CpuSplit, per: number): string {
  const ms = (s: number) => `${((s / per) * 1e3).toFixed(1)}`;
  const boot = c.started > 0 ? ` (incl. ${c.started} new worker${c.started > 1 ? "s" : ""} booting: ${ms(c.startedCpu)})` : "";
  return `host ${ms(c.host)}, tracker ${ms(c.tracker)}, agent ${ms(c.agent)}, workers ${ms(c.workers)}${boot} = ${ms(cpuTotal(c))} CPU-ms`;
}

/** CPUs the farm kept busy, and other processes' share, over the stretch. */
function fmtBusy(c: CpuSplit): string {
  return `${(cpuTotal(c) / c.wallS).toFixed(2)} CPUs busy (others ${(c.others / c.wallS).toFixed(2)})`;
}

/** Waits until the farm's processes are quiet (bench/lib/procs.ts). */
function settle(farm: Farm, timeoutMs = 8000): Promise<void> {
  return settleProcesses(() => [farm.trackerPid, farm.agentPid, ...childrenOf(farm.agentPid)], timeoutMs);
}

// ---------------------------------------------------------------- the two ways to measure a batch

interface BatchRun {
  wallMs: number;
  /** Σ over candidates of the board's measuring time (the definition in the notes). */
  boardMs: number;
  /** The same from the boards' own call clocks (stats call_ns_total): every call they ran. */
  boardClockMs: number;
  cpu: CpuSplit;
  count: number;
  /** measure() only, 1 board: p50 of the time from one candidate's end to the next's, and of a candidate's board time. */
  steady?: { intervalMs: number; boardMs: number };
}

const perCand = (r: BatchRun) => r.wallMs / r.count;
/** The share of the batch's wall time each of `boards` boards spent measuring: the farm's own scaling, whatever the machine's speed. */
const measuring = (r: BatchRun, boards: number) => r.boardMs / (boards * r.wallMs);
const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
const overhead = (r: BatchRun) => (r.wallMs - r.boardMs) / r.count;
const rate = (r: BatchRun) => r.count / (r.wallMs / 1e3);

/** Board time of one candidate: time_evaluator's timed calls (number × Σ repeats), plus its warm-up and the two checked calls at the median. */
function boardSecondsOf(t: NonNullable<MeasureResult["timing"]>): number {
  return t.number * t.results.reduce((a, b) => a + b, 0) + UNTIMED_CALLS * t.median;
}

interface Farm {
  client: TrackerClient;
  trackerPid: number;
  agentPid: number;
}

async function runMeasure(farm: Farm, batch: Batch, boards: number): Promise<BatchRun> {
  /** When each candidate's result came back. */
  const ends: number[] = [];
  const meter = startCpuSplit(farm.trackerPid, farm.agentPid);
  const t0 = nowMs();
  const results = await measure(farm.client, batch.candidates, {
    key: batch.key,
    boards,
    timeEvaluator: batch.te,
    progress: false,
    onResult: () => ends.push(nowMs()),
  });
  const wallMs = nowMs() - t0;
  const cpu = meter();
  const bad = results.filter((r) => r.outcome !== "OK");
  if (bad.length > 0) throw new Error(`${batch.label}: ${bad.length} candidate(s) not OK, first: ${bad[0]!.outcome} ${bad[0]!.message ?? ""}`);
  const board = results.map((r) => boardSecondsOf(r.timing!) * 1e3);
  return {
    wallMs,
    boardMs: board.reduce((a, b) => a + b, 0),
    // A result's counters are its candidate's alone (the board clears them first).
    boardClockMs: results.reduce((a, r) => a + (r.stats?.call_ns_total ?? 0), 0) / 1e6,
    cpu,
    count: results.length,
    ...(boards === 1 && ends.length > 2
      ? {
          steady: {
            intervalMs: percentile(
              ends.slice(1).map((t, i) => t - ends[i]!),
              50,
            ),
            boardMs: percentile(board, 50),
          },
        }
      : {}),
  };
}

function poisoned(length: number, like: AnyTypedArray): AnyTypedArray {
  const out = new (like.constructor as new (n: number) => AnyTypedArray)(length);
  new Uint8Array(out.buffer).fill(POISON);
  return out;
}

/**
 * The per-candidate-session pattern (MetaSchedule's runner): for every
 * candidate request → upload → load → the same checks and timing as measure()
 * → close, `boards` candidates at a time.
 */
async function runSessionPerCandidate(farm: Farm, batch: Batch, boards: number): Promise<BatchRun> {
  const meter = startCpuSplit(farm.trackerPid, farm.agentPid);
  const queue = [...batch.candidates];
  let boardS = 0;
  let clockNs = 0;
  const one = async (c: Candidate): Promise<void> => {
    const module = c.module as CompiledModule;
    const s = await farm.client.request(batch.key, { deadlineMs: 60_000 });
    try {
      await s.upload(module);
      const remote = await s.loadModule(module.name);
      const args: (RemoteArray | number)[] = [];
      const outputs: { array: RemoteArray; expect: AnyTypedArray }[] = [];
      for (const a of c.args) {
        if ("scalar" in a) {
          args.push(a.scalar);
        } else if ("input" in a) {
          args.push(await s.array(a.input, a.shape));
        } else if ("random" in a) {
          throw new Error(`${batch.label}: the bench's candidates send their inputs from the host`);
        } else {
          const expect = a.expect!;
          const array = await s.array(poisoned(expect.length, expect), a.output.shape);
          outputs.push({ array, expect });
          args.push(array);
        }
      }
      const fn = remote.getFunction(c.function);
      const check = async () => {
        await fn(...args);
        for (const o of outputs) {
          const got = await o.array.toArray();
          if (got.some((v, i) => v !== o.expect[i])) throw new Error(`${batch.label}: wrong answer in the per-session run`);
          await o.array.copyFrom(poisoned(o.expect.length, o.expect));
        }
      };
      await check();
      const t = await remote.timeEvaluator(c.function, batch.te)(...args);
      await check();
      clockNs += (await s.stats()).counters.call_ns_total ?? 0;
      boardS += boardSecondsOf({ results: [...t.results], number: t.number, median: t.median, mean: t.mean, min: t.min, max: t.max, std: t.std });
    } finally {
      await s.close();
    }
  };
  const t0 = nowMs();
  await Promise.all(
    Array.from({ length: boards }, async () => {
      for (let c = queue.shift(); c; c = queue.shift()) await one(c);
    }),
  );
  const wallMs = nowMs() - t0;
  return { wallMs, boardMs: boardS * 1e3, boardClockMs: clockNs / 1e6, cpu: meter(), count: batch.candidates.length };
}

/** p50 of a small request (stats()) on one session: the price of one measure() round trip. */
async function roundTripMs(client: TrackerClient, key: string): Promise<number> {
  const s = await client.request(key);
  try {
    for (let i = 0; i < RTT_WARMUP; i++) await s.stats();
    const samples: number[] = [];
    for (let i = 0; i < RTT_RUNS; i++) {
      const t0 = nowMs();
      await s.stats();
      samples.push(nowMs() - t0);
    }
    return percentile(samples, 50);
  } finally {
    await s.close();
  }
}

// ---------------------------------------------------------------- the machine's best: the board work without a farm

interface SimJob {
  t: "job";
  count: number;
}
type SimChildMessage = { t: "ready" } | { t: "done"; cpuS: number };

/** A child process: the heavy candidates' board work on the vta-sim backend itself, no farm, no RPC. */
async function simChildMain(): Promise<void> {
  const module = vtaMatmul(HEAVY_MATMUL);
  const c = matmulCase(HEAVY_MATMUL, 1);
  const expect = matmulExpect(module, HEAVY_MATMUL, c.inputs);
  const backend = new VtaSimBackend();
  const fn = [...backend.load(decodeBundle(module.bytes)).functions.values()][0]!;
  const bytes = (a: Int8Array) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  const candidate = () => {
    const arrays = [...c.inputs, new Int8Array(expect.length)].map((d) => {
      const array = backend.alloc(d.byteLength);
      array.write(0, bytes(d));
      return array;
    });
    const out = arrays[2]!;
    const args = arrays.map((array) => ({ kind: "buffer" as const, array }));
    const check = () => {
      backend.invoke(fn, args);
      const got = new Int8Array(out.read(0, expect.length).slice().buffer);
      if (got.some((v, i) => v !== expect[i])) throw new Error("direct run: wrong answer");
      out.write(0, new Uint8Array(expect.length).fill(POISON));
    };
    check();
    backend.invoke(fn, args); // time_evaluator's warm-up
    for (let r = 0; r < HEAVY_TE.repeat; r++) backend.timeCalls(fn, args, HEAVY_TE.number);
    check();
    for (const a of arrays) a.free();
  };
  candidate(); // JIT warm-up, as the farm's workers are warmed before the timed runs
  candidate();
  const job = new Promise<SimJob>((r) => process.once("message", (m) => r(m as SimJob)));
  process.send!({ t: "ready" } satisfies SimChildMessage);
  const { count } = await job;
  const c0 = selfCpuSeconds();
  for (let i = 0; i < count; i++) candidate();
  process.send!({ t: "done", cpuS: selfCpuSeconds() - c0 } satisfies SimChildMessage);
  process.disconnect();
}

/** `count` heavy candidates' board work split over `procs` plain processes, started together once all are ready. */
interface DirectRun {
  wallMs: number;
  count: number;
  cpuS: number;
  /** CPUs every other process of the machine kept busy meanwhile. */
  othersCpus: number;
}

async function runDirect(procs: number, count: number): Promise<DirectRun> {
  const self = fileURLToPath(import.meta.url);
  const children = Array.from({ length: procs }, () =>
    fork(self, ["--sim-child"], { execArgv: ["--import", import.meta.resolve("tsx")], stdio: ["ignore", "inherit", "inherit", "ipc"] }),
  );
  try {
    const next = (child: (typeof children)[number]) =>
      new Promise<SimChildMessage>((res, rej) => {
        child.once("message", (m) => res(m as SimChildMessage));
        child.once("exit", (code) => rej(new Error(`direct simulation child exited with code ${code}`)));
      });
    await Promise.all(children.map(next));
    const dones = children.map(next);
    const m0 = machineSeconds();
    const h0 = selfCpuSeconds();
    const t0 = nowMs();
    children.forEach((child, i) => child.send({ t: "job", count: Math.floor(count / procs) + (i < count % procs ? 1 : 0) } satisfies SimJob));
    const done = await Promise.all(dones);
    const wallMs = nowMs() - t0;
    const cpuS = done.reduce((a, d) => a + (d.t === "done" ? d.cpuS : 0), 0);
    const others = machineSeconds().busy - m0.busy - cpuS - (selfCpuSeconds() - h0);
    return { wallMs, count, cpuS, othersCpus: Math.max(0, others) / (wallMs / 1e3) };
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill();
  }
}

// ---------------------------------------------------------------- the benchmark

const BLANK = { target: "", verdict: "", baseline: "", ratio: "" };

interface OverheadRun {
  batch: Batch;
  batched: BatchRun;
  /** One session per candidate, on the first `sessionCandidates` candidates. */
  perSession: BatchRun;
  /** measure() on those same candidates (the batched run itself when they are all of them). */
  batchedSame: BatchRun;
}

function overheadRows(r: OverheadRun, rttMs: number): Row[] {
  const o = overhead(r.batched);
  const n = r.perSession.count;
  return [
    {
      figure: `${r.batch.label}: overhead per candidate`,
      value: fmtMs(o),
      target: `≤ ${TARGET_OVERHEAD_MS} ms`,
      verdict: verdict(o <= TARGET_OVERHEAD_MS),
      baseline: `1 round trip ${fmtMs(rttMs)}`,
      ratio: `${fmtRatio(o / rttMs)} a round trip`,
    },
    {
      ...BLANK,
      figure: "  wall / board time per candidate",
      value: `${fmtMs(perCand(r.batched))} / ${fmtMs(r.batched.boardMs / r.batched.count)} (board's call clock ${fmtMs(r.batched.boardClockMs / r.batched.count)})`,
    },
    ...(r.batched.steady
      ? [
          {
            ...BLANK,
            figure: "  steady state: p50 candidate end → next",
            value: `${fmtMs(r.batched.steady.intervalMs)}, of which board ${fmtMs(r.batched.steady.boardMs)}: overhead ${fmtMs(r.batched.steady.intervalMs - r.batched.steady.boardMs)}`,
          },
          {
            ...BLANK,
            figure: "  fixed cost of the batch",
            value: `${fmtMs((o - (r.batched.steady.intervalMs - r.batched.steady.boardMs)) * r.batched.count)} = (overhead − steady-state overhead) × ${r.batched.count}: sessions opened and closed, and on cpu boards the successor worker booting meanwhile`,
          },
        ]
      : []),
    { ...BLANK, figure: "  CPU per candidate", value: `${fmtSplit(r.batched.cpu, r.batched.count)}; ${fmtBusy(r.batched.cpu)}` },
    {
      ...BLANK,
      figure: `  one session per candidate (${n}): overhead`,
      value: fmtMs(overhead(r.perSession)),
      baseline: `measure(), same ${n}: ${fmtMs(overhead(r.batchedSame))}`,
      ratio: `batch wall ${fmtRatio(r.perSession.wallMs / r.batchedSame.wallMs)} measure()'s`,
    },
    { ...BLANK, figure: "    CPU per candidate", value: `${fmtSplit(r.perSession.cpu, n)}; ${fmtBusy(r.perSession.cpu)}` },
  ];
}

async function startMeasureFarm(boards: string[]): Promise<Farm & { stop(): Promise<void> }> {
  const farm = await startFarm(boards);
  return { client: farm.client, trackerPid: farm.tracker.proc.pid!, agentPid: farm.agent.proc.pid!, stop: () => farm.stop() };
}

/** Every board free and the farm quiet: nothing left over from the previous run lands in the next. */
async function ready(farm: Farm, boards: number): Promise<void> {
  await waitForFreeBoards(farm.client, boards);
  await settle(farm);
}

async function overheadRuns(farm: Farm, boards: number, batch: Batch, sessionCandidates: number): Promise<OverheadRun> {
  // Untimed warm-up of both patterns (host, tracker, agent and worker code paths).
  await runMeasure(farm, { ...batch, candidates: batch.candidates.slice(0, 4) }, 1);
  await ready(farm, boards);
  await runSessionPerCandidate(farm, { ...batch, candidates: batch.candidates.slice(0, 1) }, 1);
  await ready(farm, boards);
  const batched = await runMeasure(farm, batch, 1);
  await ready(farm, boards);
  const same = { ...batch, candidates: batch.candidates.slice(0, sessionCandidates) };
  let batchedSame = batched;
  if (same.candidates.length < batch.candidates.length) {
    batchedSame = await runMeasure(farm, same, 1);
    await ready(farm, boards);
  }
  const perSession = await runSessionPerCandidate(farm, same, 1);
  await ready(farm, boards);
  return { batch, batched, perSession, batchedSame };
}

/** A search's batches, `generations` of them: measure() per generation, then one Measurer for all. */
interface SearchRun {
  generations: number;
  perGeneration: { wallMs: number; cpu: CpuSplit; count: number };
  measurer: { wallMs: number; cpu: CpuSplit; count: number };
}

async function searchRuns(farm: Farm, boards: number, batch: Batch, generations: number): Promise<SearchRun> {
  const size = Math.ceil(batch.candidates.length / generations);
  const rounds = Array.from({ length: generations }, (_, g) => batch.candidates.slice(g * size, (g + 1) * size));
  const opts = { key: batch.key, timeEvaluator: batch.te, progress: false };
  const timed = async (run: () => Promise<MeasureResult[][]>) => {
    await ready(farm, boards);
    const meter = startCpuSplit(farm.trackerPid, farm.agentPid);
    const t0 = nowMs();
    const results = (await run()).flat();
    const wallMs = nowMs() - t0;
    const bad = results.filter((r) => r.outcome !== "OK");
    if (bad.length > 0) throw new Error(`${batch.label} search: ${bad[0]!.outcome} ${bad[0]!.message ?? ""}`);
    return { wallMs, cpu: meter(), count: results.length };
  };
  const perGeneration = await timed(async () => {
    const out: MeasureResult[][] = [];
    for (const r of rounds) out.push(await measure(farm.client, r, opts));
    return out;
  });
  const measurer = await timed(async () => {
    const m = new Measurer(farm.client, opts);
    try {
      const out: MeasureResult[][] = [];
      for (const r of rounds) out.push(await m.measure(r));
      return out;
    } finally {
      await m.close();
    }
  });
  return { generations, perGeneration, measurer };
}

function searchRows(r: SearchRun, label: string): Row[] {
  const per = (x: SearchRun["measurer"]) => x.wallMs / x.count;
  return [
    {
      ...BLANK,
      figure: `${label}: a search of ${r.generations} batches, per candidate`,
      value: `one Measurer ${fmtMs(per(r.measurer))}`,
      baseline: `measure() per batch ${fmtMs(per(r.perGeneration))}`,
      ratio: `${fmtRatio(r.perGeneration.wallMs / r.measurer.wallMs)} faster`,
    },
    {
      ...BLANK,
      figure: "    CPU per candidate",
      value: `Measurer: ${fmtSplit(r.measurer.cpu, r.measurer.count)}; measure() per batch: ${fmtSplit(r.perGeneration.cpu, r.perGeneration.count)}`,
    },
  ];
}

export async function benchMeasure(): Promise<void> {
  const setup0 = nowMs();
  const cpuB = await cpuBatches();
  const vtaB = vtaBatches();
  const heavyModule = vtaMatmul(HEAVY_MATMUL);
  const heavy = (count: number): Batch => ({
    label: "vta-sim heavy",
    key: "vta",
    te: HEAVY_TE,
    modules: 1,
    candidates: matmulCandidates(HEAVY_MATMUL, [heavyModule], count, "h"),
  });
  const setupMs = nowMs() - setup0;

  // 1 and 3 on a cpu board.
  const cpuFarm = await startMeasureFarm(["cpu:key=cpu"]);
  const cpuRuns: OverheadRun[] = [];
  let cpuRtt: number;
  let cpuSearch: SearchRun;
  try {
    await ready(cpuFarm, 1);
    cpuRtt = await roundTripMs(cpuFarm.client, "cpu");
    for (const batch of [cpuB.shared, cpuB.own]) cpuRuns.push(await overheadRuns(cpuFarm, 1, batch, CPU_SESSION_CANDIDATES));
    cpuSearch = await searchRuns(cpuFarm, 1, cpuB.own, SEARCH_GENERATIONS);
  } finally {
    await cpuFarm.stop();
  }

  // 1, 2 and 3 on vta-sim boards: one agent with 16.
  const maxBoards = BOARD_COUNTS[BOARD_COUNTS.length - 1]!;
  const vtaFarm = await startMeasureFarm(Array.from({ length: maxBoards }, () => "vta-sim:key=vta"));
  const vtaRuns: OverheadRun[] = [];
  const scaling = new Map<number, BatchRun>();
  /** Per board count: the fraction of linear in each round, the median one, and that round's 1-board run. */
  const linearRounds = new Map<number, { median: number; all: number[]; one: BatchRun }>();
  const heavySession = new Map<number, BatchRun>();
  // The machine's best: the same board work in plain processes, no farm.
  let direct1: DirectRun | undefined;
  let directBest: DirectRun | undefined;
  let vtaRtt: number;
  try {
    // Warm every board's worker (the simulator's JIT) before anything is timed.
    await runMeasure(vtaFarm, heavy(2 * maxBoards), maxBoards);
    await runMeasure(vtaFarm, { ...vtaB.shared, candidates: vtaB.shared.candidates.slice(0, 2 * maxBoards) }, maxBoards);
    await ready(vtaFarm, maxBoards);
    vtaRtt = await roundTripMs(vtaFarm.client, "vta");
    for (const batch of [vtaB.shared, vtaB.own]) vtaRuns.push(await overheadRuns(vtaFarm, maxBoards, batch, batch.candidates.length));
    const rounds = new Map<number, BatchRun[]>(BOARD_COUNTS.map((n) => [n, []]));
    for (let round = 0; round < SCALING_ROUNDS; round++) {
      for (const n of BOARD_COUNTS) {
        await ready(vtaFarm, maxBoards);
        rounds.get(n)!.push(await runMeasure(vtaFarm, heavy(HEAVY_CANDIDATES[n]), n));
        if (round > 0) continue;
        // Each direct baseline right after the farm run it is compared with (the farm idle meanwhile), so both see the same machine.
        await ready(vtaFarm, maxBoards);
        if (n === 1) direct1 = await runDirect(1, HEAVY_CANDIDATES[1]);
        if (n === maxBoards) directBest = await runDirect(DIRECT_PROCESSES, HEAVY_CANDIDATES[maxBoards]);
      }
    }
    // Of N boards, each round against that round's 1-board rate (a machine's speed drifts between rounds); the median round is shown.
    for (const n of BOARD_COUNTS) {
      const runs = rounds.get(n)!;
      // 1 board: the median rate; N boards: the median fraction of linear.
      const ratios = runs.map((r, i) => (n === 1 ? rate(r) : rate(r) / (n * rate(rounds.get(1)![i]!))));
      const order = ratios.map((x, i) => [x, i] as const).sort((a, b) => a[0] - b[0]);
      const median = order[Math.floor(order.length / 2)]![1];
      scaling.set(n, runs[median]!);
      linearRounds.set(n, { median: ratios[median]!, all: ratios, one: rounds.get(1)![median]! });
    }
    for (const n of SESSION_BOARD_COUNTS) {
      await ready(vtaFarm, maxBoards);
      heavySession.set(n, await runSessionPerCandidate(vtaFarm, heavy(HEAVY_CANDIDATES[n]), n));
    }
  } finally {
    await vtaFarm.stop();
  }

  if (!direct1 || !directBest) throw new Error("measure bench: the direct baselines did not run");
  const directRate = (d: DirectRun) => d.count / (d.wallMs / 1e3);
  const directCpuMs = (d: DirectRun) => (d.cpuS / d.count) * 1e3;

  const rows: Row[] = [];
  for (const r of cpuRuns) rows.push(...overheadRows(r, cpuRtt));
  rows.push(...searchRows(cpuSearch, cpuB.own.label));
  for (const r of vtaRuns) rows.push(...overheadRows(r, vtaRtt));

  const cpusHere = availableParallelism();
  for (const n of BOARD_COUNTS) {
    const run = scaling.get(n)!;
    const r = rate(run);
    const { median: linear, all: linearAll, one } = linearRounds.get(n)!;
    const oneRate = rate(one);
    if (n === 1) {
      rows.push({
        figure: "vta-sim heavy, 1 board: candidates/s",
        value: `${r.toFixed(1)}/s (rounds: ${linearAll.map((x) => x.toFixed(1)).join(", ")})`,
        target: "",
        verdict: "",
        baseline: `direct, 1 process ${directRate(direct1).toFixed(1)}/s`,
        ratio: `${fmtRatio(r / directRate(direct1))} direct`,
      });
      rows.push({
        ...BLANK,
        figure: "  wall / board time / overhead per candidate",
        value: `${fmtMs(perCand(run))} / ${fmtMs(run.boardMs / run.count)} / ${fmtMs(overhead(run))}; the board measuring ${pct(measuring(run, 1))} of the time`,
      });
      if (run.steady)
        rows.push({
          ...BLANK,
          figure: "  steady state: p50 candidate end → next",
          value: `${fmtMs(run.steady.intervalMs)}, of which board ${fmtMs(run.steady.boardMs)}: overhead ${fmtMs(run.steady.intervalMs - run.steady.boardMs)}`,
        });
    } else {
      const best = directRate(directBest);
      rows.push({
        figure: `vta-sim heavy, ${n} boards: candidates/s`,
        value: `${r.toFixed(1)}/s`,
        target: n === maxBoards ? `≥ ${(TARGET_LINEAR * 100).toFixed(0)} % of linear` : "",
        verdict: n === maxBoards ? verdict(linear >= TARGET_LINEAR) : "",
        baseline:
          `linear ${(n * oneRate).toFixed(1)}/s (1 board, same round); direct, ${DIRECT_PROCESSES} processes ${best.toFixed(1)}/s` +
          (n === maxBoards
            ? ` = ${((100 * best) / (DIRECT_PROCESSES * directRate(direct1))).toFixed(0)} % of ${DIRECT_PROCESSES} × direct, 1 process (the machine's own scaling)`
            : ""),
        ratio: `${(linear * 100).toFixed(0)} % of linear (rounds: ${linearAll.map((x) => (x * 100).toFixed(0)).join(", ")} %); ${((100 * r) / best).toFixed(0)} % of direct`,
      });
      rows.push({
        ...BLANK,
        figure: "  wall / board time per candidate",
        value: `${fmtMs(perCand(run))} / ${fmtMs(run.boardMs / run.count)} (boards share ${cpusHere} CPUs: each call takes longer)`,
      });
      rows.push({
        ...BLANK,
        figure: "  boards measuring, share of the time",
        value: `${pct(measuring(run, n))} (1 board: ${pct(measuring(one, 1))})`,
        baseline: "Σ board time / (boards × wall)",
        ratio: `${fmtRatio(measuring(run, n) / measuring(one, 1))} of 1 board's`,
      });
    }
    const busy = run.cpu.perWorker.filter((x) => x >= 0.05).sort((x, y) => x - y);
    rows.push({
      ...BLANK,
      figure: "  CPU per candidate",
      value:
        `${fmtSplit(run.cpu, run.count)}; ${fmtBusy(run.cpu)}` +
        (n > 1 ? `; ${busy.length} busy workers, ${(busy[0] ?? 0).toFixed(2)}–${(busy[busy.length - 1] ?? 0).toFixed(2)} CPU-s each` : ""),
    });
    if (n === maxBoards) {
      const perCandCpu = cpuTotal(run.cpu) / run.count;
      rows.push({
        ...BLANK,
        figure: "  CPU ceiling: CPUs / CPU per candidate",
        value: `${cpusHere} / ${fmtMs(perCandCpu * 1e3)} = ${(cpusHere / perCandCpu).toFixed(1)}/s`,
        baseline: `direct: ${cpusHere} / ${fmtMs(directCpuMs(directBest))} = ${((cpusHere * 1e3) / directCpuMs(directBest)).toFixed(1)}/s`,
        ratio: `measured ${((100 * r * perCandCpu) / cpusHere).toFixed(0)} % of the farm's ceiling`,
      });
    }
    const session = heavySession.get(n);
    if (session) {
      rows.push({
        ...BLANK,
        figure: `  one session per candidate, ${n} board${n > 1 ? "s" : ""}`,
        value: `${rate(session).toFixed(1)}/s; ${fmtMs((cpuTotal(session.cpu) / session.count) * 1e3)} CPU per candidate`,
        baseline: `measure() ${r.toFixed(1)}/s; ${fmtMs((cpuTotal(run.cpu) / run.count) * 1e3)}`,
        ratio: `batch wall ${fmtRatio(session.wallMs / run.wallMs)} measure()'s`,
      });
    }
  }
  rows.push({
    ...BLANK,
    figure: "  direct runs (no farm): CPU per candidate",
    value: `1 process ${fmtMs(directCpuMs(direct1))} (others ${direct1.othersCpus.toFixed(2)} CPUs), ${DIRECT_PROCESSES} processes ${fmtMs(directCpuMs(directBest))} (others ${directBest.othersCpus.toFixed(2)} CPUs)`,
  });

  printTable("measure(): per-candidate overhead, scaling over boards, vs one session per candidate (tracker + agent child processes)", rows, [
    `Machine: ${cpusHere} CPU(s) usable (${cpus().length} online, ${cpus()[0]?.model.trim() ?? "?"}); load average ${loadAverage()} at the end. Setup (compiling ${OWN_CANDIDATES + 1} C modules and the VTA modules) ${(setupMs / 1e3).toFixed(1)} s, untimed.`,
    `Overhead per candidate = (batch wall time − Σ board time) / candidates, 1 board. Board time of a candidate = time_evaluator's timed time (number × Σ of its repeats'`,
    `  per-call seconds) + ${UNTIMED_CALLS} calls at its median (time_evaluator's warm-up and the checks before and after timing); "board's call clock" = the boards' own`,
    `  call_ns_total counters (every call they ran), a cross-check. Batch wall time = measure() called → resolved, incl. its Summary call; modules compiled beforehand.`,
    `  Steady state: p50 over the batch of the time between two candidates' results (measure()'s onResult), minus the p50 board time.`,
    `Cheap candidates: cpu vadd of ${CPU_N} float32, vta-sim ${TINY_MATMUL.batch}×${TINY_MATMUL.inFeatures}·${TINY_MATMUL.inFeatures}×${TINY_MATMUL.outFeatures} int8 matmul; ${SHARED_CANDIDATES} sharing one module, ${OWN_CANDIDATES} each with its own (distinct C source;`,
    `  distinct VTA function name): upload + load per candidate. time_evaluator ${CHEAP_TE.number} × ${CHEAP_TE.repeat}; outputs checked before and after timing. Baseline: one round`,
    `  trip, the p50 of ${RTT_RUNS} stats() on one session of the same farm: a candidate is one request (its inputs' copies and the Measure request, sent together).`,
    `CPU per candidate = CPU-ms of each farm process over the batch / candidates (workers: live + exited, via the agent's reaped-children time; "new workers booting" =`,
    `  workers started during the batch: on a cpu board loading a module taints the worker, and its successor boots at once). "CPUs busy" = farm CPU-s / wall s;`,
    `  "others" = the rest of the machine's busy time (/proc/stat) meanwhile.`,
    `Scaling: ${HEAVY_MATMUL.batch}×${HEAVY_MATMUL.inFeatures}·${HEAVY_MATMUL.inFeatures}×${HEAVY_MATMUL.outFeatures} int8 matmul, time_evaluator ${HEAVY_TE.number} × ${HEAVY_TE.repeat}; ${BOARD_COUNTS.map((n) => `${HEAVY_CANDIDATES[n]} candidates on ${n}`).join(", ")} board(s)`,
    `  of one agent with ${maxBoards} vta-sim boards, every worker warmed first; ${SCALING_ROUNDS} rounds of ${BOARD_COUNTS.join(", ")} boards in turn, the median round shown (rounds in brackets).`,
    `  Boards measuring = Σ board time / (N × batch wall time): how busy the farm keeps N boards, immune to the machine's speed (a loaded machine slows the`,
    `  simulation itself, which lengthens board time, not this share).`,
    `  Linear = N × the same round's 1-board rate (machines drift: the H100 host's CPUs ran the same simulation 35–80 ms per candidate from one minute to the next).`,
    `  Direct = the same candidates' board work (alloc, write, the same`,
    `  calls, read-back checks) on the vta-sim backend in plain processes, no farm, no RPC, run right after the farm run it is compared with`,
    `  (farm idle): ${DIRECT_PROCESSES} processes = one per board, at most one per CPU of this ${cpusHere}-CPU machine.`,
    `  CPU ceiling = the rate at which the farm's measured CPU per candidate would saturate every CPU here.`,
    `A search of ${SEARCH_GENERATIONS} batches: the cpu module-each candidates split into ${SEARCH_GENERATIONS} batches, measured one after another with measure() per batch`,
    `  (a session, and on a cpu board a successor worker boot, per batch), then with one Measurer (sessions kept between batches); wall time per candidate.`,
    `One session per candidate (MetaSchedule's runner): request → upload → load → the same arrays, checks, time_evaluator and stats → close, per candidate, same boards`,
    `  and board count, same candidates (cpu: the first ${CPU_SESSION_CANDIDATES}, each session on a fresh worker process, with measure() rerun on those ${CPU_SESSION_CANDIDATES}).`,
  ]);
}

if (process.argv[2] === "--sim-child" && process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await simChildMain();
