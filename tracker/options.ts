import { componentLogger, type Logger } from "../protos/index.ts";

export interface TrackerOptions {
  /** Interface to bind; default 127.0.0.1 (use 0.0.0.0 to serve a network). */
  host?: string;
  /** Port to bind; 0 picks a free one. */
  port?: number;
  /** HTTP port for /metrics and the live view; 0 picks a free one; undefined: no HTTP side. */
  metricsPort?: number;
  /** How often agents must send a heartbeat. */
  heartbeatIntervalMs?: number;
  /** An agent that misses this many heartbeats in a row is lost. */
  maxMissedHeartbeats?: number;
  /** How long a request waits for a board when it names no deadline. */
  defaultDeadlineMs?: number;
  /** A granted session that the host does not open within this time is released. */
  openTimeoutMs?: number;
  /** After a worker's stream breaks, how long to wait for the agent to say why. */
  workerReportGraceMs?: number;
  logger?: Logger;
}

export type ResolvedTrackerOptions = Required<Omit<TrackerOptions, "metricsPort">> & Pick<TrackerOptions, "metricsPort">;

export const DEFAULT_HEARTBEAT_INTERVAL_MS = 500;
/** 3 × 500 ms: a frozen agent leaves the pool within 1.5–2 s (the target is 3 s). */
export const DEFAULT_MAX_MISSED_HEARTBEATS = 3;
export const DEFAULT_DEADLINE_MS = 60_000;
export const DEFAULT_OPEN_TIMEOUT_MS = 10_000;
export const DEFAULT_WORKER_REPORT_GRACE_MS = 1_000;

export function resolveTrackerOptions(opts: TrackerOptions = {}): ResolvedTrackerOptions {
  const resolved: ResolvedTrackerOptions = {
    host: opts.host ?? "127.0.0.1",
    port: opts.port ?? 9190,
    metricsPort: opts.metricsPort,
    heartbeatIntervalMs: opts.heartbeatIntervalMs ?? DEFAULT_HEARTBEAT_INTERVAL_MS,
    maxMissedHeartbeats: opts.maxMissedHeartbeats ?? DEFAULT_MAX_MISSED_HEARTBEATS,
    defaultDeadlineMs: opts.defaultDeadlineMs ?? DEFAULT_DEADLINE_MS,
    openTimeoutMs: opts.openTimeoutMs ?? DEFAULT_OPEN_TIMEOUT_MS,
    workerReportGraceMs: opts.workerReportGraceMs ?? DEFAULT_WORKER_REPORT_GRACE_MS,
    logger: opts.logger ?? componentLogger("tracker"),
  };
  for (const [name, value] of Object.entries(resolved)) {
    if (typeof value === "number" && (!Number.isFinite(value) || value < 0)) {
      throw new RangeError(`tracker option ${name} must be a non-negative number, got ${value}`);
    }
  }
  return resolved;
}
