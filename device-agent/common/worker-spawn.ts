/**
 * What the agent and a session worker agree on outside their channel (whose
 * messages are protos/farm/v1/worker.proto): what a worker is told at spawn,
 * and the line it leaves on stderr when a call ran past its timeout.
 */

/** The line the agent looks for on a dead worker's stderr (worker/watchdog.ts writes it). */
export const TIMEOUT_MARKER = "KFARM-CALL-TIMEOUT";

export interface FileLimits {
  maxUploadBytes: number;
  maxSessionBytes: number;
  /** The session's folder is a filesystem of this many bytes (device-agent/common/session-disk.ts): its ENOSPC means the quota. */
  diskBytes?: number;
}

export interface SessionLimits extends FileLimits {
  /** Per-call timeout when the host gives none. */
  callTimeoutMs: number;
}

/** Given to a worker at spawn, in the KFARM_WORKER env variable. */
export interface WorkerConfig {
  /** The agent's pid: the worker dies with it. */
  agentPid: number;
  boardName: string;
  kind: string;
  backendOptions: Record<string, unknown>;
  limits: SessionLimits;
  /** The agent asks an idle worker to run the board's canary this often (device-agent/agent/pool.ts); 0: only at a worker's start. */
  canaryIntervalMs: number;
}
