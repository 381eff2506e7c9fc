import { join, dirname } from "node:path";
import { DEFAULT_TRACKER_PORT, FarmError, SESSION_END_GRACE_MS } from "../protos/index.ts";
import { componentLogger, isLoopbackHost, type Logger, type ServerTls } from "../runtime/index.ts";
import { DEFAULT_MAX_CANARY_DRIFT } from "./canary-drift.ts";
import { FAIRNESS, type Fairness } from "./queue.ts";
import { DEFAULT_TVM_ALLOW } from "./tvm/admission.ts";

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
  /** The session end grace (protos/routes.ts): after a lane closes, how long to wait for the agent to say why. Sent to agents and hosts. */
  endGraceMs?: number;
  /** Port of the data port (relay lanes); 0 picks a free one. */
  dataPort?: number;
  /** TLS on the gRPC port and the HTTP side; mutual TLS with `clientCaFile`. Default: plaintext. */
  tls?: ServerTls;
  /** The tokens file (`kfarm token create --tokens FILE`): with it every call needs a token. Default: an open farm. */
  tokensFile?: string;
  /** Audit log (JSON lines, rotated); default `audit.jsonl` beside the tokens file, none without one. */
  auditLog?: string;
  /**
   * Where the tracker keeps what survives its restarts (tracker/state-store.ts:
   * operators' drains and quarantines, board health and its history). Default:
   * the tokens file's directory, as for the audit log — a farm with tokens is a
   * served farm, whose operators' decisions must outlive a restart, and that
   * directory is the tracker's own already (0600 files it owns). Without tokens,
   * none: a loopback or test farm starts afresh each time, and writes nothing.
   */
  stateDir?: string;
  /** The longest session anyone may hold; a request for 0 gets this. */
  maxSessionTimeoutMs?: number;
  /** Serve the HTTP side (live view, /metrics) without a token even when the farm has tokens. */
  publicHttp?: boolean;
  /** Allow binding a non-loopback address without TLS and tokens (a warning is logged). */
  insecure?: boolean;
  /** Port of the TVM port (TVM's tracker protocol, docs/tvm-tracker.md); 0 picks a free one; undefined: none. */
  tvmPort?: number;
  /** Networks (CIDR) the TVM port admits: TVM peers send no token. Default loopback only. */
  tvmAllow?: string[];
  /** Keys the TVM port serves (servers may register, clients request); default every key. */
  tvmKeys?: string[];
  /** How long a TVM client's REQUEST waits for a server; default 0, no cap: TVM's tracker waits forever, and TVM's client gives up on nothing but a closed connection. */
  tvmDeadlineMs?: number;
  /** How the TVM port orders equal priorities; default `fifo`, TVM's tracker's order (docs/tvm-tracker.md, "Scheduling"). */
  tvmFairness?: Fairness;
  /**
   * A board whose recent canary time is more than this many times its
   * baseline is suspect (tracker/canary-drift.ts): default 1.25 (25 %
   * slower); 0: canary times are kept and shown but never judged.
   */
  maxCanaryDrift?: number;
  logger?: Logger;
}

export type ResolvedTrackerOptions = Required<Omit<TrackerOptions, "metricsPort" | "tls" | "tokensFile" | "auditLog" | "stateDir" | "tvmPort" | "tvmKeys">> &
  Pick<TrackerOptions, "metricsPort" | "tls" | "tokensFile" | "auditLog" | "stateDir" | "tvmPort" | "tvmKeys">;

export const DEFAULT_HEARTBEAT_INTERVAL_MS = 500;
/** 3 × 500 ms: a frozen agent leaves the pool within 1.5–2 s (the target is 3 s). */
export const DEFAULT_MAX_MISSED_HEARTBEATS = 3;
export const DEFAULT_DEADLINE_MS = 60_000;
export const DEFAULT_OPEN_TIMEOUT_MS = 10_000;
/** A day: a tuning run keeps its sessions across batches, and a lost one costs no candidate (host-sdk/measure/measurer.ts). */
export const DEFAULT_MAX_SESSION_TIMEOUT_MS = 24 * 3600_000;

export function resolveTrackerOptions(opts: TrackerOptions = {}): ResolvedTrackerOptions {
  const resolved: ResolvedTrackerOptions = {
    host: opts.host ?? "127.0.0.1",
    port: opts.port ?? DEFAULT_TRACKER_PORT,
    metricsPort: opts.metricsPort,
    heartbeatIntervalMs: opts.heartbeatIntervalMs ?? DEFAULT_HEARTBEAT_INTERVAL_MS,
    maxMissedHeartbeats: opts.maxMissedHeartbeats ?? DEFAULT_MAX_MISSED_HEARTBEATS,
    defaultDeadlineMs: opts.defaultDeadlineMs ?? DEFAULT_DEADLINE_MS,
    openTimeoutMs: opts.openTimeoutMs ?? DEFAULT_OPEN_TIMEOUT_MS,
    endGraceMs: opts.endGraceMs ?? SESSION_END_GRACE_MS,
    dataPort: opts.dataPort ?? 0,
    tls: opts.tls,
    tokensFile: opts.tokensFile,
    auditLog: opts.auditLog ?? (opts.tokensFile ? join(dirname(opts.tokensFile), "audit.jsonl") : undefined),
    stateDir: opts.stateDir ?? (opts.tokensFile ? dirname(opts.tokensFile) : undefined),
    maxSessionTimeoutMs: opts.maxSessionTimeoutMs ?? DEFAULT_MAX_SESSION_TIMEOUT_MS,
    publicHttp: opts.publicHttp ?? false,
    insecure: opts.insecure ?? false,
    tvmPort: opts.tvmPort,
    tvmAllow: opts.tvmAllow ?? [...DEFAULT_TVM_ALLOW],
    tvmKeys: opts.tvmKeys,
    tvmDeadlineMs: opts.tvmDeadlineMs ?? 0,
    tvmFairness: opts.tvmFairness ?? "fifo",
    maxCanaryDrift: opts.maxCanaryDrift ?? DEFAULT_MAX_CANARY_DRIFT,
    logger: opts.logger ?? componentLogger("tracker"),
  };
  // At or under 1, a board as fast as its baseline would be "slow": every board suspect.
  if (!(resolved.maxCanaryDrift === 0 || (Number.isFinite(resolved.maxCanaryDrift) && resolved.maxCanaryDrift > 1))) {
    throw new FarmError(
      "INVALID_ARGUMENT",
      `tracker option maxCanaryDrift must be above 1 (1.25: a canary 25 % slower than its baseline makes its board suspect), or 0 to judge no canary's time; got ${resolved.maxCanaryDrift}`,
    );
  }
  if (!FAIRNESS.includes(resolved.tvmFairness))
    throw new FarmError("INVALID_ARGUMENT", `tracker option tvmFairness is one of ${FAIRNESS.join(", ")}, got ${JSON.stringify(resolved.tvmFairness)}`);
  for (const [name, value] of Object.entries(resolved)) {
    if (typeof value === "number" && (!Number.isFinite(value) || value < 0)) {
      throw new RangeError(`tracker option ${name} must be a non-negative number, got ${value}`);
    }
  }
  if (resolved.maxSessionTimeoutMs < 1 || resolved.maxSessionTimeoutMs > 0xffffffff) {
    throw new FarmError(
      "INVALID_ARGUMENT",
      `tracker option maxSessionTimeoutMs must be between 1 ms and ${0xffffffff} ms, got ${resolved.maxSessionTimeoutMs}`,
    );
  }
  // Anyone who reaches an open farm runs native code on its boards: outside loopback that takes TLS and tokens, or a stated choice.
  if (!isLoopbackHost(resolved.host) && !(resolved.tls && resolved.tokensFile) && !resolved.insecure) {
    const missing = [resolved.tls ? "" : "TLS (--tls-cert, --tls-key)", resolved.tokensFile ? "" : "tokens (--tokens FILE)"].filter(Boolean).join(" and ");
    throw new FarmError(
      "INVALID_ARGUMENT",
      `the tracker would listen on ${resolved.host} without ${missing}: anyone who reaches it could run code on every board. Add ${missing} (docs/security.md), or pass --insecure on a network you trust`,
    );
  }
  return resolved;
}
