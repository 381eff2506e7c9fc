/**
 * Benchmark 12, with Apache TVM's own programs only: the stock client
 * (`tvm.rpc.connect_tracker(...).request(key)`, bench/tvm_stock_client.py)
 * and stock `tvm.exec.rpc_server`s, against each tracker under test — TVM's
 * `tvm.exec.rpc_tracker`, and kernelfarm's tracker with `--tvm-port 0` —
 * and, in a third column, the same keys served by kernelfarm boards of kind
 * tvm (docs/tvm-boards.md) instead of stock rpc_servers.
 *
 * In one run the trackers take turns round by round (A B A B …), each
 * round measuring on each:
 *   - request → usable session (one remote call answered), on one kept
 *     TrackerSession (TVM's usual) and with a fresh connect_tracker per
 *     request (autotvm's habit), the server free before each request;
 *   - the same with the client's tracker sockets given TCP_NODELAY, the only
 *     change to TVM anywhere here: the difference is the stock client's own
 *     delayed-ACK stall (sendjson writes the length and the JSON in two
 *     sends), which no tracker can remove;
 *   - sessions/s with 1 and with 4 servers on one key, as many client loops
 *     as servers (request, one call, close), over a fixed wall time.
 *
 * A tracker under test is one entry of TARGETS: a name and how to start it
 * with KEY_ONE served by one server and KEY_FOUR by four. The first entry is
 * the baseline each other column is divided by.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { freePort, startAgentProcess, startTrackerProcess } from "../tests/helpers/processes.ts";
import { PYTHON, tvmEnv, tvmMissing } from "../tests/helpers/tvm.ts";
import { loadAverage, machineBusy } from "./lib/procs.ts";
import { fmtMs, fmtRatio, percentile } from "./lib/stats.ts";

const CLIENT = fileURLToPath(new URL("./tvm_stock_client.py", import.meta.url));
const ROUNDS = 3;
/** Timed requests per latency cell per round: ROUNDS × this ≥ 100 per cell. */
const RUNS = 40;
const WARMUP = 3;
const LOOP_SECONDS = 10;
const KEY_ONE = "stock-one";
const KEY_FOUR = "stock-four";
const HOST = "127.0.0.1";

/** The latency cells the client measures (bench/tvm_stock_client.py, `latency`). */
const CELLS = ["kept", "fresh", "kept_nodelay", "fresh_nodelay"] as const;
type Cell = (typeof CELLS)[number];

/** A Python child in a process group of its own, so that killing the group takes its forks too (rpc_server's session processes, the popen workers). */
interface PyChild {
  readonly proc: ChildProcess;
  /** The first line on `stream` matching `re`, after those already taken; rejects when the child exits first or `timeoutMs` passes. */
  line(re: RegExp, timeoutMs: number, stream?: "stdout" | "stderr"): Promise<string>;
}

/** Every Python child this benchmark starts, killed by group at its end, on failure, and when this process exits. */
class PyChildren {
  private readonly live = new Set<ChildProcess>();
  private readonly onExit = () => this.killAll();

  constructor() {
    process.on("exit", this.onExit);
  }

  spawn(args: string[], what: string): PyChild {
    const proc = spawn(PYTHON, args, { env: tvmEnv(), detached: true, stdio: ["pipe", "pipe", "pipe"] });
    this.live.add(proc);
    proc.on("exit", () => this.live.delete(proc));
    // rpc_server logs every session: its pipes are drained, their tail kept for error reports.
    let tail = "";
    const pending = { stdout: "", stderr: "" };
    for (const stream of ["stdout", "stderr"] as const) {
      proc[stream]!.on("data", (c: Buffer) => {
        tail = (tail + c.toString()).slice(-4000);
        pending[stream] = (pending[stream] + c.toString()).slice(-100_000);
      });
    }
    const line = (re: RegExp, timeoutMs: number, stream: "stdout" | "stderr" = "stdout") =>
      new Promise<string>((resolve, reject) => {
        const take = (): boolean => {
          const lines = pending[stream].split("\n");
          const i = lines.findIndex((l, n) => n < lines.length - 1 && re.test(l));
          if (i < 0) return false;
          pending[stream] = lines.slice(i + 1).join("\n");
          done();
          resolve(lines[i]!);
          return true;
        };
        const onData = () => void take();
        const onExit = (code: number | null, signal: string | null) => {
          if (take()) return;
          done();
          reject(new Error(`${what} exited (${signal ?? code}) before printing a line matching ${re}:\n${tail}`));
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`${what} printed no line matching ${re} within ${timeoutMs} ms:\n${tail}`));
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          proc[stream]!.off("data", onData);
          proc.off("exit", onExit);
        };
        // After the buffer's own listener (added first), so a chunk is in `pending` when take() runs.
        proc[stream]!.on("data", onData);
        proc.once("exit", onExit);
        take();
      });
    return { proc, line };
  }

  killAll(): void {
    for (const p of this.live) {
      try {
        process.kill(-p.pid!, "SIGKILL");
      } catch {
        // the group is gone already
      }
    }
    this.live.clear();
  }

  close(): void {
    this.killAll();
    process.off("exit", this.onExit);
  }
}

/** A tracker under test, started: where the stock client connects, and how to stop what `children` does not hold. */
interface Running {
  readonly host: string;
  readonly port: number;
  stop(): Promise<void>;
}

/** One column of the table. */
interface Target {
  readonly name: string;
  /** Its name in ratio headings. */
  readonly short: string;
  /** Starts it with KEY_ONE served by one stock rpc_server and KEY_FOUR by four (the client waits until they are free). */
  start(children: PyChildren): Promise<Running>;
}

/** Stock rpc_servers registering with the tracker at host:port: one for KEY_ONE, four for KEY_FOUR. */
async function startStockServers(children: PyChildren, host: string, port: number): Promise<void> {
  for (const key of [KEY_ONE, KEY_FOUR, KEY_FOUR, KEY_FOUR, KEY_FOUR]) {
    // A port range of one each: rpc_servers started at once on overlapping ranges can fail with EADDRINUSE.
    const own = await freePort();
    const args = ["--host", HOST, "--port", String(own), "--port-end", String(own + 1), "--tracker", `${host}:${port}`, "--key", key];
    children.spawn(["-m", "tvm.exec.rpc_server", ...args], `TVM's rpc_server (key ${key})`);
  }
}

const TARGETS: readonly Target[] = [
  {
    name: "TVM's tracker",
    short: "TVM",
    async start(children) {
      const first = await freePort();
      const tracker = children.spawn(
        ["-m", "tvm.exec.rpc_tracker", "--host", HOST, "--port", String(first), "--port-end", String(first + 100)],
        "TVM's rpc_tracker",
      );
      // It logs the port it bound, from the range, on stderr.
      const bound = await tracker.line(/bind to \S+:\d+/, 60_000, "stderr");
      const port = Number(/bind to \S+:(\d+)/.exec(bound)![1]);
      await startStockServers(children, HOST, port);
      return { host: HOST, port, stop: async () => {} };
    },
  },
  {
    name: "kernelfarm's TVM port",
    short: "ours",
    async start(children) {
      const tracker = await startTrackerProcess(["--tvm-port", "0"]);
      const i = tracker.tvmAddress!.lastIndexOf(":");
      const [host, port] = [tracker.tvmAddress!.slice(0, i), Number(tracker.tvmAddress!.slice(i + 1))];
      await startStockServers(children, host, port);
      return { host, port, stop: () => tracker.stop() };
    },
  },
  {
    // The same keys served by kernelfarm boards of kind tvm (docs/tvm-boards.md) instead of stock rpc_servers.
    name: "kernelfarm tvm boards",
    short: "boards",
    async start() {
      const tracker = await startTrackerProcess(["--tvm-port", "0"]);
      const boards = [KEY_ONE, KEY_FOUR, KEY_FOUR, KEY_FOUR, KEY_FOUR].map((key, i) => `tvm:key=${key},name=t${i}`);
      const agent = await startAgentProcess(tracker.address, boards, [], { env: tvmEnv() as Record<string, string> });
      const i = tracker.tvmAddress!.lastIndexOf(":");
      const [host, port] = [tracker.tvmAddress!.slice(0, i), Number(tracker.tvmAddress!.slice(i + 1))];
      return {
        host,
        port,
        stop: async () => {
          await agent.stop();
          await tracker.stop();
        },
      };
    },
  },
];

/** What one target gave over all rounds. */
interface Figures {
  latency: Record<Cell, number[]>;
  /** Per round: each cell's p50. */
  roundP50: Record<Cell, number[]>;
  /** Sessions/s per round, by the number of servers. */
  rate: Record<1 | 4, number[]>;
}

async function measureLatency(children: PyChildren, at: Running, into: Figures): Promise<void> {
  const client = children.spawn([CLIENT, "latency", at.host, String(at.port), KEY_ONE, String(WARMUP), String(RUNS)], "the stock client (latency)");
  // Each request waits for the server to be back in the pool (~0.1 s); 60 s for the servers to register first.
  const line = await client.line(/^\{/, 60_000 + CELLS.length * (WARMUP + RUNS) * 2_000);
  const cells = JSON.parse(line) as Record<Cell, number[]>;
  for (const cell of CELLS) {
    into.latency[cell].push(...cells[cell]);
    into.roundP50[cell].push(percentile(cells[cell], 50));
  }
}

/** Sessions/s of `servers` client loops on the key that `servers` servers serve, started together. */
async function measureRate(children: PyChildren, at: Running, servers: 1 | 4): Promise<number> {
  const key = servers === 1 ? KEY_ONE : KEY_FOUR;
  const loops = Array.from({ length: servers }, (_, i) =>
    children.spawn([CLIENT, "loop", at.host, String(at.port), key, String(servers), String(LOOP_SECONDS)], `the stock client (loop ${i + 1} of ${servers})`),
  );
  await Promise.all(loops.map((l) => l.line(/^ready$/, 60_000)));
  for (const l of loops) l.proc.stdin!.write("go\n");
  const results = await Promise.all(loops.map((l) => l.line(/^\{/, (LOOP_SECONDS + 60) * 1000)));
  return results.map((r) => JSON.parse(r) as { sessions: number; seconds: number }).reduce((a, r) => a + r.sessions / r.seconds, 0);
}

/** Why the stock programs cannot run here, or false: TVM itself, and its tracker's tornado. */
function missing(): string | false {
  const tvm = tvmMissing();
  if (tvm) return tvm;
  const tracker = spawnSync(PYTHON, ["-c", "import tvm.rpc.tracker"], { encoding: "utf8", env: tvmEnv(), timeout: 60_000 });
  if (tracker.status !== 0) return `TVM's tracker does not import for ${PYTHON} (it needs python3-tornado): ${tracker.stderr.trim().split("\n").pop()}`;
  return false;
}

export async function benchTvmStock(): Promise<void> {
  const why = missing();
  if (why) {
    console.log(`\ntvm-stock: skipped — ${why}`);
    return;
  }
  const children = new PyChildren();
  const running: Running[] = [];
  const figures: Figures[] = TARGETS.map(() => ({
    latency: { kept: [], fresh: [], kept_nodelay: [], fresh_nodelay: [] },
    roundP50: { kept: [], fresh: [], kept_nodelay: [], fresh_nodelay: [] },
    rate: { 1: [], 4: [] },
  }));
  const busy: string[] = [];
  const loadBefore = loadAverage();
  try {
    for (const target of TARGETS) running.push(await target.start(children));
    for (let round = 0; round < ROUNDS; round++) {
      busy.push((await machineBusy()).toFixed(2));
      for (const [t, at] of running.entries()) {
        await measureLatency(children, at, figures[t]!);
        for (const servers of [1, 4] as const) figures[t]!.rate[servers].push(await measureRate(children, at, servers));
      }
    }
    busy.push((await machineBusy()).toFixed(2));
  } finally {
    children.close();
    for (const r of running) await r.stop();
  }
  printFigures(figures, busy, loadBefore);
}

function printFigures(figures: readonly Figures[], busy: readonly string[], loadBefore: string): void {
  const p = (cell: Cell, q: number) => figures.map((f) => percentile(f.latency[cell], q));
  const rate = (servers: 1 | 4, perServer: boolean) =>
    figures.map((f) => f.rate[servers].reduce((a, b) => a + b, 0) / f.rate[servers].length / (perServer ? servers : 1));
  const stall = figures.map((f) => percentile(f.latency.kept, 50) - percentile(f.latency.kept_nodelay, 50));
  const n = figures[0]!.latency.kept.length;
  const rows: { figure: string; values: number[]; fmt: (v: number) => string }[] = [
    { figure: "request → usable session, kept TrackerSession, p50", values: p("kept", 50), fmt: fmtMs },
    { figure: "  p90", values: p("kept", 90), fmt: fmtMs },
    { figure: "request → usable session, fresh connect_tracker per request, p50", values: p("fresh", 50), fmt: fmtMs },
    { figure: "  p90", values: p("fresh", 90), fmt: fmtMs },
    { figure: "the same, client's tracker socket with TCP_NODELAY, kept, p50", values: p("kept_nodelay", 50), fmt: fmtMs },
    { figure: "  p90", values: p("kept_nodelay", 90), fmt: fmtMs },
    { figure: "the same, TCP_NODELAY, fresh connect_tracker per request, p50", values: p("fresh_nodelay", 50), fmt: fmtMs },
    { figure: "  p90", values: p("fresh_nodelay", 90), fmt: fmtMs },
    { figure: "the stock client's stall: kept p50 − kept TCP_NODELAY p50", values: stall, fmt: fmtMs },
    { figure: "sessions/s, 1 server, 1 client loop", values: rate(1, false), fmt: fmtRate },
    { figure: "sessions/s, 4 servers, 4 client loops", values: rate(4, false), fmt: fmtRate },
    { figure: "  per server", values: rate(4, true), fmt: fmtRate },
  ];
  const base = TARGETS[0]!;
  const headers = ["figure", ...TARGETS.map((t) => t.name), ...TARGETS.slice(1).map((t) => `${t.short} ÷ ${base.short}`)];
  const cells = rows.map((r) => [r.figure, ...r.values.map(r.fmt), ...r.values.slice(1).map((v) => fmtRatio(v / r.values[0]!))]);
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: readonly string[]) =>
    c
      .map((x, i) => x.padEnd(widths[i]!))
      .join("  ")
      .trimEnd();
  const rule = "-".repeat(widths.reduce((a, w) => a + w + 2, -2));
  console.log(
    `\nTVM's tracker protocol with TVM's own programs: stock client, stock rpc_servers, ${ROUNDS} rounds alternating ${TARGETS.map((t) => t.short).join(" → ")}`,
  );
  console.log(rule);
  console.log(line(headers));
  console.log(rule);
  for (const c of cells) console.log(line(c));
  console.log(rule);
  const perRound = (cell: Cell) => TARGETS.map((t, i) => `${t.short} ${figures[i]!.roundP50[cell].map(fmtMs).join(", ")}`).join("; ");
  const notes = [
    `ratio: ${TARGETS.slice(1)
      .map((t) => t.short)
      .join(", ")} ÷ ${base.short}, for times and rates alike (times: < 1 is faster; rates: > 1 is more)`,
    `latency: ${n} timed requests per cell and tracker (${ROUNDS} rounds × ${RUNS}, after ${WARMUP} untimed each), key "${KEY_ONE}" of one server, the server back in the pool before each (untimed); "usable": the returned RPCSession answered remote.cpu(0).exist`,
    `TCP_NODELAY: bench/tvm_stock_client.py sets it on the client's tracker sockets (base.connect_with_retry) and changes nothing else; stock sendjson writes length and JSON in two sends, and without it the second waits for the tracker's delayed ACK`,
    `sessions/s: ${LOOP_SECONDS} s per cell per round, each loop on its own kept TrackerSession requesting, calling once and closing; the mean over rounds`,
    `p50 per round, kept: ${perRound("kept")}`,
    `p50 per round, fresh: ${perRound("fresh")}`,
    `p50 per round, kept TCP_NODELAY: ${perRound("kept_nodelay")}`,
    `p50 per round, fresh TCP_NODELAY: ${perRound("fresh_nodelay")}`,
    `sessions/s per round, 1 / 4 servers: ${TARGETS.map((t, i) => `${t.short} ${figures[i]!.rate[1].map(fmtRate).join(", ")} / ${figures[i]!.rate[4].map(fmtRate).join(", ")}`).join("; ")}`,
    `other processes' CPU before each round and after the last: ${busy.join(", ")} CPU; load average ${loadBefore} before, ${loadAverage()} after`,
  ];
  for (const note of notes) console.log(`  ${note}`);
}

function fmtRate(v: number): string {
  return Number.isFinite(v) ? `${v.toFixed(1)}/s` : "n/a";
}
