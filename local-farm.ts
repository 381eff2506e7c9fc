/**
 * The embedded default farm: a tracker and an agent with built-in boards in
 * this process (session workers are still separate processes), for the
 * quick start, examples and benchmarks. Their logs (JSON lines on stderr)
 * are at EMBEDDED_LOG_LEVEL, warn, unless KFARM_LOG asks for another: the
 * process's stdout and stderr are the user's.
 */
import type { Tracker, TrackerOptions } from "./tracker/index.ts";
import type { Agent, AgentOptions } from "./device-agent/index.ts";
import { connectTracker, type TrackerClient } from "./host-sdk/index.ts";
import { FarmError } from "./protos/index.ts";
import { EMBEDDED_LOG_LEVEL, componentLogger } from "./runtime/index.ts";

export interface LocalFarmOptions {
  /** `--board` style declarations; default two CPU boards of key "cpu". */
  boards?: string[];
  tracker?: Omit<TrackerOptions, "port">;
  agent?: Omit<AgentOptions, "tracker" | "boards">;
}

export interface LocalFarm {
  readonly address: string;
  readonly tracker: Tracker;
  readonly agent: Agent;
  /** A client connected to the farm. */
  readonly client: TrackerClient;
  /** Resolves when every board is free. */
  ready(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startLocalFarm(opts: LocalFarmOptions = {}): Promise<LocalFarm> {
  // The host script runs on this same event loop and may compute for seconds
  // (compiling, reference checks): heartbeats here must tolerate that.
  // Loaded here, not at the top: `import "kernelfarm"` must not load the
  // tracker and the agent into every host script that never starts a farm.
  const [{ Tracker }, { Agent, parseBoardFlag }] = await Promise.all([import("./tracker/index.ts"), import("./device-agent/index.ts")]);
  const quiet = { defaultLevel: EMBEDDED_LOG_LEVEL };
  const tracker = await new Tracker({
    heartbeatIntervalMs: 1000,
    maxMissedHeartbeats: 15,
    logger: componentLogger("tracker", {}, quiet),
    ...opts.tracker,
    port: 0,
  }).listen();
  const flags = opts.boards ?? ["cpu:key=cpu,name=cpu0", "cpu:key=cpu,name=cpu1"];
  const name = opts.agent?.name ?? "local";
  const agent = await new Agent({
    logger: componentLogger("agent", { agent: name }, quiet),
    ...opts.agent,
    name,
    tracker: tracker.address,
    boards: flags.map(parseBoardFlag),
  }).start();
  const client = await connectTracker(tracker.address, { clientId: "local-farm" });
  const farm: LocalFarm = {
    address: tracker.address,
    tracker,
    agent,
    client,
    async ready(timeoutMs = 30_000) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const s = await client.summary();
        if (s.boards.length === flags.length && s.boards.every((b) => b.state === "free")) return;
        if (Date.now() > until)
          throw new FarmError("DEADLINE_EXCEEDED", `local farm not ready after ${timeoutMs} ms: ${s.boards.map((b) => `${b.id}=${b.state}`).join(", ")}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    async close() {
      client.close();
      agent.close();
      await tracker.close();
    },
  };
  return farm;
}
