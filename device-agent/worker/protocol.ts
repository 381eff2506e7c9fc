/** Messages between the agent and its session workers (Node IPC, JSON). */
import type { FarmErrorCode } from "../../protos/index.ts";
import type { RequestCounts, SessionLimits } from "./session-server.ts";

/** Given to a worker at spawn, in the KFARM_WORKER env variable. */
export interface WorkerConfig {
  tracker: string;
  /** The agent's pid: the worker dies with it. */
  agentPid: number;
  boardName: string;
  kind: string;
  backendOptions: Record<string, unknown>;
  workRoot: string;
  limits: SessionLimits;
  /** Run the board's canary this often while idle (and once at start); 0: only at start. */
  canaryIntervalMs: number;
}

export type AgentToWorker = { t: "assign"; sessionId: string; token: string };

export type WorkerToAgent =
  | { t: "ready" }
  /** The board's canary ran (device-agent/canary.ts). */
  | { t: "canary"; ok: boolean; detail: string; durationMs: number }
  /** The session loaded foreign code: this worker exits after it. */
  | { t: "tainted"; sessionId: string }
  /**
   * Calls, time evaluations and errors counted since the last report (deltas,
   * for the agent's metrics): at most once a second while serving, and once
   * at the session's end, before "ended".
   */
  | ({ t: "counters" } & RequestCounts)
  | { t: "ended"; sessionId: string; reusable: boolean; error?: { code: FarmErrorCode; message: string } };
