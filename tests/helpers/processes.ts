/**
 * Real farm processes for tests: `kfarm tracker` and `kfarm agent` started as
 * children on 127.0.0.1 port 0. The tracker reports its bound address on
 * stdout; the wait for it races the child's early exit. `runCli` runs a
 * one-shot command (`kfarm certs init`, `kfarm token create`) to its end.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { connectTracker, type TrackerClient } from "../../host-sdk/index.ts";
import { IP } from "./ip.ts";

const CLI = fileURLToPath(new URL("../../cli/main.ts", import.meta.url));
const LOG_LEVEL = process.env.KFARM_TEST_LOG ?? "error";

export interface FarmProcess {
  readonly proc: ChildProcess;
  /** Everything the process wrote on stderr, for assertions and failure reports. */
  stderr(): string;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** How a child is started: `env` is added to (and wins over) the test's environment, KFARM_LOG included. */
export interface CliOptions {
  env?: Record<string, string>;
  /** Run it in this network namespace (a host of tests/multihost/netbed.ts). */
  netns?: string;
  /** The kfarm CLI of another checkout (a benchmark's baseline commit); default this one's. */
  cli?: string;
  /** Flags for node itself, before the CLI (`--cpu-prof`: NODE_OPTIONS refuses it). */
  nodeArgs?: string[];
}

/** `node ARGS`, in a network namespace when asked (`ip netns exec` execs node: the pid is node's; `ip` is $KFARM_IP's, helpers/ip.ts). */
export function spawnNode(args: string[], opts: CliOptions & { stdin?: "ignore" | "pipe" } = {}): ChildProcess {
  const [cmd, argv] = opts.netns ? [IP, ["netns", "exec", opts.netns, process.execPath, ...args]] : [process.execPath, args];
  return spawn(cmd, argv, { env: { ...process.env, KFARM_LOG: LOG_LEVEL, ...opts.env }, stdio: [opts.stdin ?? "ignore", "pipe", "pipe"] });
}

function startCli(args: string[], opts: CliOptions = {}): { proc: ChildProcess; stderr: () => string } {
  return watched(spawnNode([...(opts.nodeArgs ?? []), "--import", "tsx", opts.cli ?? CLI, ...args], opts));
}

/** A child killed when the test process exits, its stderr collected (and shown with KFARM_TEST_LOG). */
function watched(proc: ChildProcess): { proc: ChildProcess; stderr: () => string } {
  let err = "";
  proc.stderr!.on("data", (c: Buffer) => {
    err += c.toString();
    if (process.env.KFARM_TEST_LOG) process.stderr.write(c);
  });
  live.add(proc);
  proc.on("exit", () => live.delete(proc));
  return { proc, stderr: () => err };
}

const live = new Set<ChildProcess>();
process.on("exit", () => {
  for (const p of live) p.kill("SIGKILL");
});

async function stopProcess(proc: ChildProcess, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = once(proc, "exit");
  proc.kill(signal);
  const timer = setTimeout(() => proc.kill("SIGKILL"), 5000);
  await exited;
  clearTimeout(timer);
}

/** Waits for a stdout line matching `re`, or fails when the process exits first. */
export function waitForLine(proc: ChildProcess, re: RegExp, what: string, stderr: () => string, timeoutMs = 20_000): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    let out = "";
    const onData = (c: Buffer) => {
      out += c.toString();
      const m = re.exec(out);
      if (m) {
        cleanup();
        resolve(m);
      }
    };
    const onExit = (code: number | null) => {
      cleanup();
      reject(new Error(`${what} exited (code ${code}) before it was ready:\n${stderr()}`));
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`${what} was not ready within ${timeoutMs} ms:\n${stderr()}`));
    }, timeoutMs);
    const cleanup = () => {
      clearTimeout(timer);
      proc.stdout!.off("data", onData);
      proc.off("exit", onExit);
    };
    proc.stdout!.on("data", onData);
    proc.once("exit", onExit);
  });
}

export interface TrackerProcess extends FarmProcess {
  readonly address: string;
  readonly port: number;
  /** Whether it said it serves TLS ("listening on … (TLS)"). */
  readonly tls: boolean;
  /** Its data port (relay lanes). */
  readonly dataPort: number;
  /** "host:port" of its HTTP side (/metrics), when started with --metrics-port. */
  readonly httpAddress?: string;
  /** "https" or "http", with httpAddress. */
  readonly httpScheme?: "https" | "http";
  /** "host:port" of its TVM port (TVM's tracker protocol), when started with --tvm-port. */
  readonly tvmAddress?: string;
}

export async function startTrackerProcess(args: string[] = [], port = 0, opts: CliOptions = {}): Promise<TrackerProcess> {
  const { proc, stderr } = startCli(["tracker", "--port", String(port), ...args], opts);
  // With --metrics-port the HTTP line follows the listening line: wait for both. With TLS the first says "(TLS)" and the second https.
  // With --tvm-port the TVM port's line comes last.
  const base = args.includes("--metrics-port")
    ? /listening on (\S+):(\d+)( \(TLS\))?\n.*data port (\d+).*\n.*http on (https?):\/\/(\S+?)\//.source
    : /listening on (\S+):(\d+)( \(TLS\))?\n.*data port (\d+)/.source;
  const re = new RegExp(args.includes("--tvm-port") ? `${base}.*\\n(?:.*\\n)*?.*tvm port (?<tvm>\\S+) ` : base);
  const m = await waitForLine(proc, re, "kfarm tracker", stderr);
  return {
    proc,
    stderr,
    address: `${m[1]}:${m[2]}`,
    port: Number(m[2]),
    tls: !!m[3],
    dataPort: Number(m[4]),
    ...(m[6] ? { httpAddress: m[6], httpScheme: m[5] as "https" | "http" } : {}),
    ...(m.groups?.tvm ? { tvmAddress: m.groups.tvm } : {}),
    stop: (s) => stopProcess(proc, s),
  };
}

export interface AgentProcess extends FarmProcess {
  /** "host:port" of its metrics server, when started with --metrics-port. */
  readonly metricsAddress?: string;
  /** "https" or "http", with metricsAddress. */
  readonly metricsScheme?: "https" | "http";
}

export async function startAgentProcess(tracker: string, boards: string[], args: string[] = [], opts: CliOptions = {}): Promise<AgentProcess> {
  const { proc, stderr } = startCli(["agent", "--tracker", tracker, ...boards.flatMap((b) => ["--board", b]), ...args], opts);
  // The metrics line (with --metrics-port) comes before the serving line.
  const m = await waitForLine(proc, /(?:metrics on (https?):\/\/(\S+)\/metrics\n)?kfarm agent .* serving/, "kfarm agent", stderr);
  return { proc, stderr, ...(m[2] ? { metricsAddress: m[2], metricsScheme: m[1] as "https" | "http" } : {}), stop: (s) => stopProcess(proc, s) };
}

/**
 * Any program started like the farm's processes — a bundle's launcher, say:
 * `env` is its whole environment, and the wait for a stdout line matching
 * `ready` races its early exit.
 */
export async function startProgram(
  file: string,
  args: string[],
  opts: { env: NodeJS.ProcessEnv; ready: RegExp; what: string; cwd?: string; timeoutMs?: number },
): Promise<FarmProcess & { readonly match: RegExpMatchArray }> {
  const { proc, stderr } = watched(spawn(file, args, { env: opts.env, cwd: opts.cwd, stdio: ["ignore", "pipe", "pipe"] }));
  const match = await waitForLine(proc, opts.ready, opts.what, stderr, opts.timeoutMs);
  return { proc, match, stderr, stop: (s) => stopProcess(proc, s) };
}

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a `kfarm` command to its end (killed after `timeoutMs`). */
export async function runCli(args: string[], opts: CliOptions & { timeoutMs?: number } = {}): Promise<CliRun> {
  const proc = spawnNode(["--import", "tsx", CLI, ...args], opts);
  live.add(proc);
  let stdout = "";
  let stderr = "";
  proc.stdout!.on("data", (c: Buffer) => (stdout += c.toString()));
  proc.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
  const timer = setTimeout(() => proc.kill("SIGKILL"), opts.timeoutMs ?? 30_000);
  const [code] = (await once(proc, "close")) as [number | null];
  clearTimeout(timer);
  live.delete(proc);
  return { code, stdout, stderr };
}

export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 15_000,
  everyMs = 20,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ""}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Waits until the tracker lists `n` free boards (of `key`, if given). */
export async function waitForFreeBoards(client: TrackerClient, n: number, key?: string, timeoutMs = 20_000): Promise<void> {
  await waitFor(
    `${n} free board(s)${key ? ` of key ${key}` : ""}`,
    async () => {
      const s = await client.summary();
      return s.boards.filter((b) => b.state === "free" && (!key || b.key === key)).length >= n;
    },
    timeoutMs,
  );
}

/** A tracker, one agent with `boards`, and a connected client. */
export async function startFarm(boards: string[], opts: { trackerArgs?: string[]; agentArgs?: string[]; agentEnv?: Record<string, string> } = {}) {
  const tracker = await startTrackerProcess(opts.trackerArgs);
  const agent = await startAgentProcess(tracker.address, boards, opts.agentArgs, opts.agentEnv ? { env: opts.agentEnv } : {});
  const client = await connectTracker(tracker.address);
  await waitForFreeBoards(client, boards.length);
  return {
    tracker,
    agent,
    client,
    async stop() {
      client.close();
      await agent.stop();
      await tracker.stop();
    },
  };
}

/** A loopback port nothing listens on (for now): for a server started on it later, or a peer that never answers. */
export async function freePort(): Promise<number> {
  const server = createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const port = (server.address() as { port: number }).port;
  server.close();
  await once(server, "close");
  return port;
}
