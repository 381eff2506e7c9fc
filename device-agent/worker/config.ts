/** What a session worker is told at spawn (its messages with the agent are in protos/farm/v1/worker.proto). */
import type { SessionLimits } from "./session-server.ts";

/** Given to a worker at spawn, in the KFARM_WORKER env variable. */
export interface WorkerConfig {
  /** Where the worker dials the tracker: HOST:PORT, or `unix:PATH` (the agent's forwarder, device-agent/worker-link.ts). */
  tracker: string;
  /** The agent's pid: the worker dies with it. */
  agentPid: number;
  boardName: string;
  kind: string;
  backendOptions: Record<string, unknown>;
  limits: SessionLimits;
  /** The agent asks an idle worker to run the board's canary this often (device-agent/pool.ts); 0: only at a worker's start. */
  canaryIntervalMs: number;
}
