/**
 * Benchmark 18: a farm of 10,000 boards, simulated (issue 28).
 *
 * Processes, all on this machine:
 * - the real tracker (`kfarm tracker`, a child process started as every
 *   benchmark and test starts it: tests/helpers/processes.ts);
 * - AGENTS simulated agents of BOARDS boards each (default 100 × 100), 50
 *   agents to a process (`--agent-procs`), each agent on its own gRPC
 *   connection with its own direct-lane port. bench/lib/sim-agent.ts says
 *   what is real and what is simulated: the agent ↔ tracker contract and the
 *   lane's handshake, Close and clean end are the real protocol through
 *   protos/ and the agent's own ticket door; no worker process runs, and a
 *   board answers nothing but Close;
 * - HOSTS hosts (default 1,000), 250 to a process (`--host-procs`), each its
 *   own `connectTracker()` client of the real host SDK on its own connection,
 *   looping request() → hold the session `--hold-ms` (default 10 s) → close()
 *   (bench/lib/host-loops.ts), their first requests spread over a hold time.
 *   They run at nice `--hosts-nice` (default 10): on two CPUs the hosts need
 *   more CPU than the tracker, and at its priority they starved it until it
 *   dropped agents for missed heartbeats;
 * - this process, which calls Summary every `--summary-every-ms` (500 ms).
 *
 * A grant, end to end: request() opens the host's Session stream with the
 * request in its metadata; the tracker queues it, picks a free board, sends
 * AssignSession (with the session's ticket) on the board's agent's Attach
 * stream and the Grant (board, ticket, the agent's direct-lane address) as the
 * stream's first message; the host dials the direct lane with a LaneHello, the
 * agent admits the ticket (waiting for the assignment if the host was
 * faster), welcomes the host and tells the tracker LaneOpened. request()
 * resolves then, with a usable session: that wait is the grant latency.
 * close() sends Close on the lane; the board answers Ok and its clean end,
 * reports SessionEnd to the tracker and is ready again (BoardReady).
 *
 * Measured over `--duration-s` (30 s) after `--warmup-s` (10 s): grant latency
 * p50/p99 at the hosts; the tracker's CPU seconds per grant (/proc/PID/stat
 * before and after the window; also net of its CPU with every board attached
 * and no host, heartbeats alone); its RSS peak (VmHWM, its whole life, the
 * 10,000 registrations included); Summary of every key as `kfarm status` calls
 * it (the SDK, decoding the reply) and undecoded (the tracker's part and the
 * transfer), in turn. Baseline, same run, a fresh tracker: the same rate of
 * grants on a farm of 1 agent × 10 boards (5 hosts holding their sessions
 * hosts/5 times shorter), and its Summary (a unary round trip with 10
 * boards). Checks after each run: every request granted and released, the
 * agents' counts agree with the hosts', every board listed and free again.
 *
 *   npm run bench -- farm-scale                                   # 100 × 100 boards, 1,000 hosts
 *   npm run bench -- farm-scale --agents 10 --boards 10 --hosts 50 --hold-ms 500
 *   node --import tsx bench/farm-scale.ts --cpu-prof /tmp/prof     # the tracker's CPU profile too
 *   node --import tsx bench/farm-scale.ts --tracker-cli ../old/cli/main.ts   # another checkout's tracker
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdirSync } from "node:fs";
import { setPriority } from "node:os";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import { connectTracker } from "../host-sdk/index.ts";
import { HostService } from "../protos/index.ts";
import { makeClient } from "../runtime/index.ts";
import { statusKiB } from "../tests/helpers/procfs.ts";
import { startTrackerProcess, waitFor, type TrackerProcess } from "../tests/helpers/processes.ts";
import type { HostLoopResult } from "./lib/host-loops.ts";
import type { SimAgentStats } from "./lib/sim-agent.ts";
import { cpuSeconds } from "./lib/procs.ts";
import { fmtMiB, fmtMs, fmtRatio, nowMs, percentile, printTable, verdict, type Row } from "./lib/stats.ts";

const SIM_AGENTS = fileURLToPath(new URL("./lib/sim-agents.ts", import.meta.url));
const HOST_LOOPS = fileURLToPath(new URL("./lib/host-loops.ts", import.meta.url));

export const TARGET_RSS_BYTES = 1 << 30;
export const TARGET_GRANT_P99_MS = 50;
export const TARGET_SUMMARY_P50_MS = 50;
/** The baseline farm: one agent of this many boards. */
const BASELINE_BOARDS = 10;

export interface FarmScaleOptions {
  agents: number;
  boards: number;
  hosts: number;
  durationS: number;
  warmupS: number;
  holdMs: number;
  agentProcs: number;
  hostProcs: number;
  summaryEveryMs: number;
  /**
   * The hosts' processes run at this nice level (0: as the tracker and the
   * agents). On a small machine the hosts need more CPU than the tracker,
   * and at equal priority they starve it: with 1,000 hosts on 2 CPUs its
   * reads of the agents' heartbeats fell seconds behind while it was 30 %
   * busy, and it dropped agents. The simulated agents keep the tracker's
   * priority: their heartbeats must not be late either.
   */
  hostsNice: number;
  /** Also run the baseline farm (1 × 10 boards). */
  baseline: boolean;
  /** Write the tracker's CPU profile (node --cpu-prof) into this folder. */
  cpuProf?: string;
  /** Extra `kfarm tracker` flags. */
  trackerArgs: string[];
  /** The kfarm CLI (cli/main.ts) of another checkout to run the tracker from: a before/after comparison. Default this one's. */
  trackerCli?: string;
  key: string;
  /** Where the run's progress is told (the benchmark: stderr); default nowhere. */
  progress?: (line: string) => void;
}

export const DEFAULT_FARM_SCALE: FarmScaleOptions = {
  agents: 100,
  boards: 100,
  hosts: 1000,
  durationS: 30,
  warmupS: 10,
  holdMs: 10_000,
  agentProcs: 0,
  hostProcs: 0,
  summaryEveryMs: 500,
  hostsNice: 10,
  baseline: true,
  trackerArgs: [],
  key: "sim",
};

/** The flags that take a value (bench/run.ts keeps them out of the benchmark names). */
export const FARM_SCALE_VALUE_FLAGS = [
  "--agents",
  "--boards",
  "--hosts",
  "--duration-s",
  "--warmup-s",
  "--hold-ms",
  "--agent-procs",
  "--host-procs",
  "--summary-every-ms",
  "--hosts-nice",
  "--cpu-prof",
  "--tracker-arg",
  "--tracker-cli",
];

export function parseFarmScaleArgs(argv: readonly string[]): FarmScaleOptions {
  const o: FarmScaleOptions = { ...DEFAULT_FARM_SCALE, trackerArgs: [] };
  const num = (flag: string, v: string | undefined) => {
    const n = Number(v);
    if (v === undefined || !Number.isFinite(n) || n < 0) throw new Error(`farm-scale: ${flag} needs a number ≥ 0, got ${v}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const v = argv[i + 1];
    switch (a) {
      case "--agents":
        o.agents = num(a, v);
        i++;
        break;
      case "--boards":
        o.boards = num(a, v);
        i++;
        break;
      case "--hosts":
        o.hosts = num(a, v);
        i++;
        break;
      case "--duration-s":
        o.durationS = num(a, v);
        i++;
        break;
      case "--warmup-s":
        o.warmupS = num(a, v);
        i++;
        break;
      case "--hold-ms":
        o.holdMs = num(a, v);
        i++;
        break;
      case "--agent-procs":
        o.agentProcs = num(a, v);
        i++;
        break;
      case "--host-procs":
        o.hostProcs = num(a, v);
        i++;
        break;
      case "--summary-every-ms":
        o.summaryEveryMs = num(a, v);
        i++;
        break;
      case "--hosts-nice":
        o.hostsNice = num(a, v);
        i++;
        break;
      case "--cpu-prof":
        o.cpuProf = v;
        i++;
        break;
      case "--tracker-arg":
        o.trackerArgs.push(v!);
        i++;
        break;
      case "--tracker-cli":
        o.trackerCli = v;
        i++;
        break;
      case "--no-baseline":
        o.baseline = false;
        break;
      default:
        break; // bench/run.ts's own flags and the benchmark names
    }
  }
  if (!(o.agents >= 1 && o.boards >= 1 && o.hosts >= 1 && o.durationS > 0))
    throw new Error("farm-scale: --agents, --boards, --hosts and --duration-s must be at least 1");
  return o;
}

export interface FarmScaleResult {
  options: FarmScaleOptions;
  /** Boards the tracker's Summary listed once every agent attached, and free after the run. */
  boardsListed: number;
  boardsFreeAfter: number;
  /** Agents' start → every board free at the tracker. */
  attachMs: number;
  hosts: HostLoopResult;
  agents: SimAgentStats;
  windowS: number;
  trackerCpuS: number;
  /** CPU of the simulated agents' and the hosts' processes over the window (the machine's other load). */
  agentsCpuS: number;
  hostsCpuS: number;
  rssPeakBytes: number;
  rssAfterBytes: number;
  /** Summary (every key) through the host SDK, as `kfarm status` calls it, while the load ran; and before it, the farm idle. */
  summaryMs: number[];
  summaryIdleMs: number[];
  /** The same call with the reply left undecoded (the tracker's part and the transfer, no client decoding), under load and idle. */
  summaryRawMs: number[];
  summaryRawIdleMs: number[];
  /** The Summary reply's size on the wire. */
  summaryBytes: number;
  /** The tracker's CPU with every board attached and no host (heartbeats), CPU-s per s. */
  trackerIdleCpu: number;
}

const live = new Set<ChildProcess>();
process.on("exit", () => {
  for (const p of live) p.kill("SIGKILL");
});

const HAS_NICE = (() => {
  try {
    execFileSync("nice", ["true"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

/**
 * A child whose stdout lines are waited for by their first word; the wait
 * races its exit. `nice` > 0: it runs at that lower priority, every thread
 * of it (nice(1) before exec; without nice(1), setpriority of its main thread).
 */
function spawnChild(args: string[], niceness = 0): { proc: ChildProcess; line: (word: string) => Promise<string> } {
  const node = [process.execPath, "--import", "tsx", ...args];
  const env = { ...process.env, KFARM_LOG: process.env.KFARM_LOG ?? "error" };
  const proc =
    niceness > 0 && HAS_NICE
      ? spawn("nice", ["-n", String(niceness), ...node], { stdio: ["pipe", "pipe", "inherit"], env })
      : spawn(node[0]!, node.slice(1), { stdio: ["pipe", "pipe", "inherit"], env });
  if (niceness > 0 && !HAS_NICE) setPriority(proc.pid!, niceness);
  live.add(proc);
  proc.once("exit", () => live.delete(proc));
  let out = "";
  const waiting = new Map<string, (line: string) => void>();
  proc.stdout!.on("data", (c: Buffer) => {
    out += c.toString();
    let nl: number;
    while ((nl = out.indexOf("\n")) >= 0) {
      const l = out.slice(0, nl);
      out = out.slice(nl + 1);
      for (const [word, done] of waiting) if (l.startsWith(word)) done(l.slice(word.length).trim());
    }
  });
  return {
    proc,
    line: (word) =>
      new Promise((resolve, reject) => {
        const onExit = (code: number | null) => reject(new Error(`${args[0]} exited (code ${code}) before it printed "${word}"`));
        proc.once("exit", onExit);
        waiting.set(word, (l) => {
          waiting.delete(word);
          proc.off("exit", onExit);
          resolve(l);
        });
      }),
  };
}

async function stopChild(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = once(proc, "exit");
  proc.kill("SIGTERM");
  await exited;
}

/** Splits `n` into `parts` near-equal counts (none empty). */
function split(n: number, parts: number): number[] {
  const k = Math.max(1, Math.min(n, parts));
  return Array.from({ length: k }, (_, i) => Math.floor(n / k) + (i < n % k ? 1 : 0));
}

/** A Summary call of every key whose reply is not decoded: resolves to its size in bytes. */
function rawSummary(address: string): { call(): Promise<number>; close(): void } {
  const method = (HostService as unknown as grpc.ServiceClientConstructor).service.Summary!;
  const client = makeClient<grpc.Client>(grpc.Client, address, {});
  return {
    call: () =>
      new Promise((resolve, reject) =>
        client.makeUnaryRequest(
          method.path,
          method.requestSerialize,
          (b: Buffer) => b,
          { key: "", health_history: false },
          new grpc.Metadata(),
          { deadline: Date.now() + 60_000 },
          (err, reply?: Buffer) => (err ? reject(err) : resolve(reply!.length)),
        ),
      ),
    close: () => client.close(),
  };
}

async function timed(n: number, f: () => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = nowMs();
    await f();
    out.push(nowMs() - t);
  }
  return out;
}

/** How long the tracker is watched with every board attached and no host, for its CPU with heartbeats alone. */
const IDLE_WATCH_MS = 3000;

/** One farm, one load: the machinery of the benchmark (and of tests/farm-scale.test.ts). */
export async function runFarmScale(opts: FarmScaleOptions): Promise<FarmScaleResult> {
  const total = opts.agents * opts.boards;
  if (opts.cpuProf) mkdirSync(opts.cpuProf, { recursive: true });
  const tracker: TrackerProcess = await startTrackerProcess(opts.trackerArgs, 0, {
    ...(opts.cpuProf ? { nodeArgs: ["--cpu-prof", "--cpu-prof-dir", resolve(opts.cpuProf)] } : {}),
    ...(opts.trackerCli ? { cli: resolve(opts.trackerCli) } : {}),
  });
  const pid = tracker.proc.pid!;
  const say = (line: string) => opts.progress?.(`${new Date().toISOString()} farm-scale: ${line}`);
  say(`tracker pid ${pid} at ${tracker.address}; starting ${opts.agents} agents × ${opts.boards} boards`);
  const client = await connectTracker(tracker.address, { rpcTimeoutMs: 60_000 });
  const raw = rawSummary(tracker.address);
  const agentProcs: ChildProcess[] = [];
  const hostProcs: ChildProcess[] = [];
  try {
    // The agents, in processes of up to 50 each.
    const t0 = nowMs();
    let first = 0;
    const attached: Promise<string>[] = [];
    for (const n of split(opts.agents, opts.agentProcs || Math.ceil(opts.agents / 50))) {
      const child = spawnChild([SIM_AGENTS, tracker.address, String(n), String(opts.boards), "--first", String(first), "--key", opts.key]);
      agentProcs.push(child.proc);
      attached.push(child.line("attached"));
      first += n;
    }
    const statsLines = agentProcs.map((p) => {
      const c = { proc: p };
      return new Promise<SimAgentStats>((resolve, reject) => {
        let out = "";
        c.proc.stdout!.on("data", (b: Buffer) => (out += b.toString()));
        c.proc.once("exit", (code) => {
          const m = /^stats (.*)$/m.exec(out);
          if (m) resolve(JSON.parse(m[1]!) as SimAgentStats);
          else reject(new Error(`the simulated agents exited (code ${code}) without their stats`));
        });
      });
    });
    // Their stats are read after the run; a process that dies early fails it there (and its boards leave the tracker).
    for (const p of statsLines) p.catch(() => {});
    await Promise.all(attached);
    let boardsListed = 0;
    await waitFor(
      `${total} free boards`,
      async () => {
        const s = await client.summary({ key: opts.key });
        boardsListed = s.boards.length;
        return s.boards.filter((b) => b.state === "free").length === total;
      },
      120_000,
      200,
    );
    const attachMs = nowMs() - t0;
    say(`every board free after ${(attachMs / 1e3).toFixed(1)} s; Summary and the tracker's CPU with no host`);

    // Summary with every board registered, the farm idle; the tracker's CPU with heartbeats alone.
    await timed(3, () => client.summary());
    const summaryIdleMs = await timed(10, () => client.summary());
    const summaryRawIdleMs = await timed(10, () => raw.call());
    const summaryBytes = await raw.call();
    const idle0 = cpuSeconds(pid);
    await new Promise((r) => setTimeout(r, IDLE_WATCH_MS));
    const trackerIdleCpu = (cpuSeconds(pid) - idle0) / (IDLE_WATCH_MS / 1e3);

    // The hosts, in processes of up to 250 each; their first requests spread over a hold time (within the warm-up),
    // as hosts that are not in lockstep would be.
    const staggerMs = Math.min(Math.max(opts.holdMs, 100), opts.warmupS * 1000);
    const hostLines: Promise<string>[] = [];
    const ready: Promise<string>[] = [];
    for (const n of split(opts.hosts, opts.hostProcs || Math.ceil(opts.hosts / 250))) {
      const child = spawnChild(
        [HOST_LOOPS, tracker.address, String(n), "--key", opts.key, "--hold-ms", String(opts.holdMs), "--stagger-ms", String(staggerMs)],
        opts.hostsNice,
      );
      hostProcs.push(child.proc);
      ready.push(child.line("ready"));
      hostLines.push(child.line("result"));
    }
    for (const p of hostLines) p.catch(() => {});
    await Promise.all(ready);
    say(`${opts.hosts} hosts connected; go (warm-up ${opts.warmupS} s, then ${opts.durationS} s)`);

    const warmupMs = opts.warmupS * 1000;
    const durationMs = opts.durationS * 1000;
    for (const p of hostProcs) p.stdin!.write(`${JSON.stringify({ warmupMs, durationMs })}\n`);
    const go = nowMs();
    const others = () => ({ agents: agentProcs.reduce((a, p) => a + cpuSeconds(p.pid!), 0), hosts: hostProcs.reduce((a, p) => a + cpuSeconds(p.pid!), 0) });
    // The window: from the warm-up's end to the last request's start, timed here as in the hosts.
    await new Promise((r) => setTimeout(r, warmupMs));
    const cpuA = cpuSeconds(pid);
    const othersA = others();
    say("window starts");
    const a = nowMs();
    const summaryMs: number[] = [];
    const summaryRawMs: number[] = [];
    // Every summaryEveryMs one Summary, through the SDK and undecoded in turn.
    for (let i = 0; nowMs() - go < warmupMs + durationMs; i++) {
      const t = nowMs();
      if (i % 2 === 0) {
        await client.summary();
        summaryMs.push(nowMs() - t);
      } else {
        await raw.call();
        summaryRawMs.push(nowMs() - t);
      }
      const left = warmupMs + durationMs - (nowMs() - go);
      if (left > 0) await new Promise((r) => setTimeout(r, Math.min(left, Math.max(0, opts.summaryEveryMs - (nowMs() - t)))));
    }
    const cpuB = cpuSeconds(pid);
    const othersB = others();
    const windowS = (nowMs() - a) / 1e3;
    say("window over; waiting for the hosts' last sessions");
    const results = (await Promise.all(hostLines)).map((l) => JSON.parse(l) as HostLoopResult);
    const hosts = mergeHosts(results);

    // Every session released: every board free again.
    let boardsFreeAfter = 0;
    await waitFor(
      `${total} free boards after the run`,
      async () => {
        const s = await client.summary({ key: opts.key });
        boardsFreeAfter = s.boards.filter((b) => b.state === "free").length;
        return boardsFreeAfter === total;
      },
      30_000,
      200,
    ).catch(() => {});
    const rssPeakBytes = statusKiB(pid, "VmHWM") * 1024;
    const rssAfterBytes = statusKiB(pid, "VmRSS") * 1024;
    await Promise.all(agentProcs.map(stopChild));
    const agents = mergeAgents(await Promise.all(statsLines));
    return {
      options: opts,
      boardsListed,
      boardsFreeAfter,
      attachMs,
      hosts,
      agents,
      windowS,
      trackerCpuS: cpuB - cpuA,
      agentsCpuS: othersB.agents - othersA.agents,
      hostsCpuS: othersB.hosts - othersA.hosts,
      rssPeakBytes,
      rssAfterBytes,
      summaryMs,
      summaryIdleMs,
      summaryRawMs,
      summaryRawIdleMs,
      summaryBytes,
      trackerIdleCpu,
    };
  } finally {
    client.close();
    raw.close();
    await Promise.all([...hostProcs, ...agentProcs].map(stopChild));
    await tracker.stop();
  }
}

function mergeHosts(rs: HostLoopResult[]): HostLoopResult {
  const m: HostLoopResult = { hosts: 0, grantMs: [], releaseMs: [], requested: 0, granted: 0, released: 0, grantedInWindow: 0, lanes: {}, errors: {} };
  for (const r of rs) {
    m.hosts += r.hosts;
    for (const v of r.grantMs) m.grantMs.push(v);
    for (const v of r.releaseMs) m.releaseMs.push(v);
    m.requested += r.requested;
    m.granted += r.granted;
    m.released += r.released;
    m.grantedInWindow += r.grantedInWindow;
    for (const [k, n] of Object.entries(r.lanes)) m.lanes[k] = (m.lanes[k] ?? 0) + n;
    for (const [k, e] of Object.entries(r.errors)) {
      const seen = (m.errors[k] ??= { count: 0, first: e.first });
      seen.count += e.count;
    }
    m.loopDelay = worst(m.loopDelay, r.loopDelay);
  }
  return m;
}

function mergeAgents(rs: SimAgentStats[]): SimAgentStats {
  const m: SimAgentStats = {
    assigned: 0,
    direct: 0,
    relay: 0,
    closed: 0,
    released: 0,
    hostLeft: 0,
    endedByTracker: {},
    otherRequests: 0,
    doubleAssigned: 0,
    heartbeatRttMs: [],
  };
  for (const r of rs) {
    for (const k of ["assigned", "direct", "relay", "closed", "released", "hostLeft", "otherRequests", "doubleAssigned"] as const) m[k] += r[k];
    for (const [code, n] of Object.entries(r.endedByTracker)) m.endedByTracker[code] = (m.endedByTracker[code] ?? 0) + n;
    for (const v of r.heartbeatRttMs) m.heartbeatRttMs.push(v);
    m.loopDelay = worst(m.loopDelay, r.loopDelay);
  }
  return m;
}

function worst(a: { p99Ms: number; maxMs: number } | undefined, b: { p99Ms: number; maxMs: number } | undefined) {
  if (!a || !b) return a ?? b;
  return { p99Ms: Math.max(a.p99Ms, b.p99Ms), maxMs: Math.max(a.maxMs, b.maxMs) };
}

/** What must hold after any run: every request granted and released, the agents saw the same, every board listed and free again. */
export function farmScaleProblems(r: FarmScaleResult): string[] {
  const p: string[] = [];
  const total = r.options.agents * r.options.boards;
  const h = r.hosts;
  if (Object.keys(h.errors).length > 0)
    p.push(
      `host errors: ${Object.entries(h.errors)
        .map(([c, e]) => `${c} × ${e.count} (first: ${e.first})`)
        .join("; ")}`,
    );
  if (h.granted !== h.requested) p.push(`${h.requested} requests, ${h.granted} granted`);
  if (h.released !== h.granted) p.push(`${h.granted} granted, ${h.released} released cleanly`);
  if (r.agents.assigned !== h.granted) p.push(`the agents were assigned ${r.agents.assigned} sessions, the hosts were granted ${h.granted}`);
  if (r.agents.closed !== h.released) p.push(`the agents closed ${r.agents.closed} sessions at their hosts' Close, the hosts released ${h.released}`);
  if (r.agents.hostLeft || r.agents.doubleAssigned || r.agents.released || Object.keys(r.agents.endedByTracker).length)
    p.push(`agents: ${JSON.stringify({ ...r.agents, heartbeatRttMs: undefined, loopDelay: undefined })}`);
  if (r.boardsListed !== total) p.push(`the tracker listed ${r.boardsListed} boards, not ${total}`);
  if (r.boardsFreeAfter !== total) p.push(`${r.boardsFreeAfter} of ${total} boards free after the run`);
  if (h.granted === 0) p.push("no session was granted");
  return p;
}

const max = (xs: readonly number[]) => xs.reduce((a, b) => Math.max(a, b), -Infinity);

function hb(r: FarmScaleResult): string {
  const h = r.agents.heartbeatRttMs;
  return `${fmtMs(percentile(h, 50))} / ${fmtMs(percentile(h, 99))} / ${fmtMs(max(h))}`;
}

function lag(d: { p99Ms: number; maxMs: number } | undefined): string {
  return d ? `${d.p99Ms.toFixed(0)} / ${d.maxMs.toFixed(0)} ms` : "n/a";
}

function describe(r: FarmScaleResult): string {
  const o = r.options;
  return `${o.agents} × ${o.boards} boards, ${o.hosts} hosts holding ${o.holdMs.toFixed(0)} ms`;
}

export async function benchFarmScale(argv: readonly string[] = process.argv.slice(2)): Promise<void> {
  const opts = parseFarmScaleArgs(argv);
  const total = opts.agents * opts.boards;
  const progress = (line: string) => console.error(line);
  const big = await runFarmScale({ ...opts, progress });
  // The baseline: the same rate of grants on a farm of one agent of 10 boards, its hosts holding their sessions
  // as much shorter as they are fewer (half the boards, so that a free board always waits).
  const baseHosts = Math.min(opts.hosts, BASELINE_BOARDS / 2);
  const base = opts.baseline
    ? await runFarmScale({
        ...opts,
        progress,
        agents: 1,
        boards: BASELINE_BOARDS,
        hosts: baseHosts,
        holdMs: (opts.holdMs * baseHosts) / opts.hosts,
        warmupS: Math.min(opts.warmupS, 2),
        durationS: Math.min(opts.durationS, 10),
        agentProcs: 1,
        hostProcs: 1,
        cpuProf: undefined,
      })
    : undefined;

  const g = big.hosts.grantMs;
  const perGrant = (r: FarmScaleResult) => (r.trackerCpuS / Math.max(1, r.hosts.grantedInWindow)) * 1e3;
  const rate = (r: FarmScaleResult) => r.hosts.grantedInWindow / r.windowS;
  const netPerGrant = (r: FarmScaleResult) => ((r.trackerCpuS - r.trackerIdleCpu * r.windowS) / Math.max(1, r.hosts.grantedInWindow)) * 1e3;
  const pct = (cpus: number) => `${(cpus * 100).toFixed(0)}%`;
  const bl = (f: (r: FarmScaleResult) => string) => (base ? f(base) : "");
  const ratio = (v: number, f: (r: FarmScaleResult) => number) => (base ? fmtRatio(v / f(base)) : "");
  const gp50 = percentile(g, 50);
  const gp99 = percentile(g, 99);
  const sp50 = percentile(big.summaryMs, 50);
  const cpu = perGrant(big);
  const blank = { target: "", verdict: "", baseline: "", ratio: "" };
  const rows: Row[] = [
    {
      figure: "grant (request() → usable session), p50",
      value: fmtMs(gp50),
      target: "",
      verdict: "",
      baseline: bl((b) => `${describe(b)}: ${fmtMs(percentile(b.hosts.grantMs, 50))}`),
      ratio: ratio(gp50, (b) => percentile(b.hosts.grantMs, 50)),
    },
    {
      figure: "  p99",
      value: fmtMs(gp99),
      target: `≤ ${TARGET_GRANT_P99_MS} ms`,
      verdict: verdict(gp99 <= TARGET_GRANT_P99_MS),
      baseline: bl((b) => fmtMs(percentile(b.hosts.grantMs, 99))),
      ratio: ratio(gp99, (b) => percentile(b.hosts.grantMs, 99)),
    },
    { ...blank, figure: "  max", value: fmtMs(max(g)), baseline: bl((b) => fmtMs(max(b.hosts.grantMs))) },
    {
      ...blank,
      figure: "close() → clean end, p50 / p99",
      value: `${fmtMs(percentile(big.hosts.releaseMs, 50))} / ${fmtMs(percentile(big.hosts.releaseMs, 99))}`,
      baseline: bl((b) => `${fmtMs(percentile(b.hosts.releaseMs, 50))} / ${fmtMs(percentile(b.hosts.releaseMs, 99))}`),
    },
    { ...blank, figure: "grants per second", value: `${rate(big).toFixed(0)}/s`, baseline: bl((b) => `${rate(b).toFixed(1)}/s`) },
    {
      ...blank,
      figure: "tracker CPU per grant (all its CPU in the window / grants)",
      value: `${cpu.toFixed(2)} ms`,
      baseline: bl((b) => `${perGrant(b).toFixed(2)} ms`),
      ratio: ratio(cpu, perGrant),
    },
    {
      ...blank,
      figure: "  less its CPU with no host (heartbeats)",
      value: `${netPerGrant(big).toFixed(2)} ms`,
      baseline: bl((b) => `${netPerGrant(b).toFixed(2)} ms`),
      ratio: ratio(netPerGrant(big), netPerGrant),
    },
    {
      ...blank,
      figure: "  tracker CPU: with the load / no host",
      value: `${pct(big.trackerCpuS / big.windowS)} / ${pct(big.trackerIdleCpu)} of a CPU`,
      baseline: bl((b) => `${pct(b.trackerCpuS / b.windowS)} / ${pct(b.trackerIdleCpu)}`),
    },
    {
      figure: "tracker RSS peak (VmHWM)",
      value: fmtMiB(big.rssPeakBytes),
      target: `≤ ${fmtMiB(TARGET_RSS_BYTES)}`,
      verdict: verdict(big.rssPeakBytes <= TARGET_RSS_BYTES),
      baseline: bl((b) => fmtMiB(b.rssPeakBytes)),
      ratio: ratio(big.rssPeakBytes, (b) => b.rssPeakBytes),
    },
    {
      figure: `Summary (every key, ${total} boards; client.summary() as kfarm status) under load, p50`,
      value: fmtMs(sp50),
      target: `≤ ${TARGET_SUMMARY_P50_MS} ms`,
      verdict: verdict(sp50 <= TARGET_SUMMARY_P50_MS),
      baseline: bl((b) => `${BASELINE_BOARDS} boards: ${fmtMs(percentile(b.summaryMs, 50))}`),
      ratio: ratio(sp50, (b) => percentile(b.summaryMs, 50)),
    },
    { ...blank, figure: "  p99", value: fmtMs(percentile(big.summaryMs, 99)), baseline: bl((b) => fmtMs(percentile(b.summaryMs, 99))) },
    { ...blank, figure: "  the farm idle, p50", value: fmtMs(percentile(big.summaryIdleMs, 50)), baseline: bl((b) => fmtMs(percentile(b.summaryIdleMs, 50))) },
    {
      ...blank,
      figure: "  the reply not decoded (tracker + transfer) under load, p50 / p99",
      value: `${fmtMs(percentile(big.summaryRawMs, 50))} / ${fmtMs(percentile(big.summaryRawMs, 99))}`,
      baseline: bl((b) => `${fmtMs(percentile(b.summaryRawMs, 50))} / ${fmtMs(percentile(b.summaryRawMs, 99))}`),
    },
    {
      ...blank,
      figure: "    the farm idle, p50",
      value: fmtMs(percentile(big.summaryRawIdleMs, 50)),
      baseline: bl((b) => fmtMs(percentile(b.summaryRawIdleMs, 50))),
    },
  ];
  const problems = [
    ...farmScaleProblems(big).map((p) => `CHECK FAILED (${describe(big)}): ${p}`),
    ...(base ? farmScaleProblems(base).map((p) => `CHECK FAILED (baseline): ${p}`) : []),
  ];
  const procs = (r: FarmScaleResult) => `${Math.ceil(r.options.agents / 50)}`;
  printTable(
    `18. a farm of ${total.toLocaleString("en")} boards, simulated: ${opts.agents} agents × ${opts.boards} boards, ${opts.hosts} hosts (request → hold ${opts.holdMs} ms → close) for ${opts.durationS} s`,
    rows,
    [
      `window ${big.windowS.toFixed(1)} s after a ${opts.warmupS} s warm-up: ${big.hosts.grantMs.length} grants timed, ${big.hosts.grantedInWindow} completed in it; whole run ${big.hosts.requested} requested, ${big.hosts.granted} granted, ${big.hosts.released} released; lanes ${JSON.stringify(big.hosts.lanes)}.`,
      `every board free at the tracker ${(big.attachMs / 1e3).toFixed(1)} s after the agents started; the Summary reply of every key is ${(big.summaryBytes / 1024).toFixed(0)} KiB on the wire; under load one call every ${opts.summaryEveryMs} ms, through the SDK (${big.summaryMs.length}) and undecoded (${big.summaryRawMs.length}) in turn.`,
      `CPU over the window: tracker ${big.trackerCpuS.toFixed(1)} s, simulated agents ${big.agentsCpuS.toFixed(1)} s (${procs(big)} process(es)), hosts ${big.hostsCpuS.toFixed(1)} s (${Math.ceil(opts.hosts / 250)} process(es)), of ${(big.windowS * 2).toFixed(0)} CPU-s on 2 CPUs.`,
      `event loops of the load generators, p99 / max late: simulated agents ${lag(big.agents.loopDelay)}, hosts ${lag(big.hosts.loopDelay)} (a starved generator delays grants the tracker did not).`,
      `heartbeat → ack at the simulated agents over the whole run, p50 / p99 / max: ${hb(big)} (an agent gives the tracker up after 4 unanswered, ~2.5 s).`,
      `agents saw: ${JSON.stringify({ ...big.agents, loopDelay: undefined, heartbeatRttMs: undefined })}.`,
      ...(base
        ? [
            `baseline: ${describe(base)}, ${base.windowS.toFixed(1)} s window, ${base.hosts.grantedInWindow} grants; agents saw ${JSON.stringify({ ...base.agents, loopDelay: undefined, heartbeatRttMs: undefined })}.`,
          ]
        : []),
      ...(problems.length ? problems : ["checks: every request granted and released, the agents' counts agree, every board listed and free after the run."]),
    ],
  );
  if (problems.length) throw new Error(problems.join("\n"));
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.env.KFARM_LOG ??= "error";
  process.env.KFARM_TEST_LOG ??= process.env.KFARM_LOG;
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => process.exit(130));
  benchFarmScale().then(
    () => process.exit(0),
    (err) => {
      console.error((err as Error).stack ?? err);
      process.exit(1);
    },
  );
}
