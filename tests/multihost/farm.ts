/**
 * A farm across the bed's hosts: the tracker on its host, agents on theirs,
 * and drivers (driver.ts) on client hosts, every one a real process in its
 * own namespace reaching the others over the wire. `startBedFarm` is the
 * layout every multi-host test uses: tracker, agent1, agent2, client1,
 * client2, with cpu boards of one key on both agents (other boards where
 * asked: bench/tune-hosts.ts gives each agent vta-sim boards).
 */
import type { ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { FarmError, type FarmErrorCode } from "../../protos/index.ts";
import { spawnNode, startAgentProcess, startTrackerProcess, type AgentProcess, type TrackerProcess } from "../helpers/processes.ts";
import { NetBed } from "./netbed.ts";

const DRIVER = fileURLToPath(new URL("./driver.ts", import.meta.url));

/** A command's failure on a driver: the farm's code and message, and how long the command ran before it failed. */
export class DriverError extends FarmError {
  constructor(
    code: FarmErrorCode,
    message: string,
    readonly ms: number,
  ) {
    super(code, message);
  }
}

/** A driver process on one host: `do(op, args)` runs one command there. */
export class Driver {
  private nextId = 1;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a driver's answer is JSON the tests read field by field (see do())
  private readonly waiting = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  private stderr = "";

  private constructor(
    readonly host: string,
    private readonly proc: ChildProcess,
  ) {
    createInterface({ input: proc.stdout! }).on("line", (line) => {
      const msg = JSON.parse(line) as { id: number; ok?: unknown; error?: { code: string; message: string; ms: number } };
      const w = this.waiting.get(msg.id);
      if (!w) return;
      this.waiting.delete(msg.id);
      if (msg.error) w.reject(new DriverError(msg.error.code as FarmErrorCode, msg.error.message, msg.error.ms));
      else w.resolve(msg.ok);
    });
    proc.stderr!.on("data", (c: Buffer) => (this.stderr += c.toString()));
    proc.on("exit", (code) => {
      for (const w of this.waiting.values()) w.reject(new Error(`the driver on ${host} exited (${code}):\n${this.stderr}`));
      this.waiting.clear();
    });
  }

  static async start(bed: NetBed, host: string): Promise<Driver> {
    const proc = spawnNode(["--import", "tsx", DRIVER], { netns: bed.host(host).ns, stdin: "pipe" });
    const d = new Driver(host, proc);
    // Its first line (id 0) says it is ready; an early exit rejects instead.
    await new Promise<void>((resolve, reject) => d.waiting.set(0, { resolve: () => resolve(), reject }));
    return d;
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the answer is JSON of the op's own shape, read by the tests field by field
  do(op: string, args: Record<string, unknown> = {}): Promise<any> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.proc.stdin!.write(`${JSON.stringify({ id, op, ...args })}\n`);
    });
  }

  async stop(): Promise<void> {
    if (this.proc.exitCode !== null) return;
    const exited = new Promise((r) => this.proc.once("exit", r));
    this.proc.stdin!.end();
    this.proc.kill("SIGTERM");
    await exited;
  }
}

export interface BedFarm {
  bed: NetBed;
  tracker: TrackerProcess;
  agents: Record<"agent1" | "agent2", AgentProcess>;
  clients: Record<"client1" | "client2", Driver>;
  /** The tracker's address on the bed. */
  address: string;
  stop(): Promise<void>;
}

export const BED_HOSTS = ["tracker", "agent1", "agent2", "client1", "client2"] as const;
export type AgentHost = keyof BedFarm["agents"];

export interface BedFarmOptions {
  /** cpu boards of key `cpu` on each agent (default 1), unless `boards` says otherwise. */
  boardsPerAgent?: number;
  /** Each agent's `--board` flags, e.g. `vta-sim:key=vta,name=agent1-vta0,host=agent1`; default `boardsPerAgent` cpu boards. */
  boards?: (agent: AgentHost) => string[];
  trackerArgs?: string[];
  agentArgs?: string[];
}

/** The agents' flags for the bed: heartbeats as shipped; each agent serves `boardsPerAgent` cpu boards of key `cpu`, or `boards(agent)`. */
export async function startBedFarm(opts: BedFarmOptions = {}): Promise<BedFarm> {
  const bed = await NetBed.create([...BED_HOSTS]);
  const started: Array<{ stop(): Promise<void> }> = [];
  try {
    const trackerHost = bed.host("tracker");
    // The bed is a private network of the test's own: plaintext, no tokens (--insecure), as a trusted LAN.
    const tracker = await startTrackerProcess(["--host", trackerHost.address, "--insecure", ...(opts.trackerArgs ?? [])], 0, { netns: trackerHost.ns });
    started.push(tracker);
    const address = `${trackerHost.address}:${tracker.port}`;
    const cpuBoards = (agent: AgentHost) => Array.from({ length: opts.boardsPerAgent ?? 1 }, (_, i) => `cpu:key=cpu,name=${agent}-cpu${i},host=${agent}`);
    const boards = opts.boards ?? cpuBoards;
    const agents = {} as BedFarm["agents"];
    for (const name of ["agent1", "agent2"] as const) {
      agents[name] = await startAgentProcess(address, boards(name), ["--name", name, ...(opts.agentArgs ?? [])], { netns: bed.host(name).ns });
      started.push(agents[name]);
    }
    const clients = {} as BedFarm["clients"];
    for (const name of ["client1", "client2"] as const) {
      clients[name] = await Driver.start(bed, name);
      started.push(clients[name]);
      await clients[name].do("connect", { tracker: address });
    }
    return {
      bed,
      tracker,
      agents,
      clients,
      address,
      async stop() {
        for (const p of started.reverse()) await p.stop().catch(() => {});
        await bed.destroy();
      },
    };
  } catch (err) {
    for (const p of started.reverse()) await p.stop().catch(() => {});
    await bed.destroy();
    throw err;
  }
}

/** Median of a list of numbers. */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}
