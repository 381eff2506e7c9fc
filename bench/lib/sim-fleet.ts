/**
 * A fleet of simulated agents (bench/lib/sim-agents.ts, run as its own
 * process) attached to a tracker: 50 agents × 20 boards, for the benchmarks
 * that measure the tracker with 1,000 boards.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import type { TrackerClient } from "../../host-sdk/index.ts";
import { waitFor } from "../../tests/helpers/processes.ts";

const SIM = fileURLToPath(new URL("./sim-agents.ts", import.meta.url));
export const SIM_AGENTS = 50;
export const SIM_BOARDS_PER_AGENT = 20;
export const SIM_BOARDS = SIM_AGENTS * SIM_BOARDS_PER_AGENT;

export interface SimFleet {
  /** Stops the simulated agents (their boards leave the tracker). */
  stop(): Promise<void>;
}

/** Starts the fleet and resolves once the tracker lists every board free. */
export async function attachSimFleet(trackerAddress: string, client: TrackerClient): Promise<SimFleet> {
  const sim: ChildProcess = spawn(process.execPath, ["--import", "tsx", SIM, trackerAddress, String(SIM_AGENTS), String(SIM_BOARDS_PER_AGENT)], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const fleet: SimFleet = {
    async stop() {
      if (sim.exitCode !== null) return;
      const exited = once(sim, "exit");
      sim.kill("SIGTERM");
      await exited;
    },
  };
  try {
    await new Promise<void>((resolve, reject) => {
      let out = "";
      sim.stdout!.on("data", (c: Buffer) => {
        out += c.toString();
        if (out.includes("attached")) resolve();
      });
      sim.once("exit", (code) => reject(new Error(`simulated agents exited (code ${code})`)));
    });
    await waitFor(
      `${SIM_BOARDS} free boards`,
      async () => {
        const s = await client.summary();
        return s.boards.filter((b) => b.state === "free").length === SIM_BOARDS;
      },
      30_000,
      50,
    );
  } catch (err) {
    await fleet.stop();
    throw err;
  }
  return fleet;
}
