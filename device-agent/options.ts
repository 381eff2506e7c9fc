import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { componentLogger, type ClientSecurity, type Logger } from "../protos/index.ts";
import { DEFAULT_CANARY_INTERVAL_MS } from "./canary.ts";
import type { BoardConfig } from "./board-config.ts";

export interface AgentOptions {
  /** Tracker address HOST:PORT. */
  tracker: string;
  /** How to reach the tracker: TLS (the farm's CA, a client certificate for mutual TLS) and the agent's token. Default: plaintext, no token. */
  security?: ClientSecurity;
  boards: BoardConfig[];
  /** How the agent appears in the summary; default the host name and pid (with a token: the token's name). */
  name?: string;
  /** Parent of the per-session working directories. */
  workRoot?: string;
  /** Largest single upload. */
  maxUploadBytes?: number;
  /** All files of one session together. */
  maxSessionBytes?: number;
  /** Per-call timeout when the host gives none. */
  callTimeoutMs?: number;
  /** Idle workers kept started per board. */
  warmWorkers?: number;
  /** Idle boards run their canary this often (and every new worker once); 0: only at worker start. */
  canaryIntervalMs?: number;
  /** HTTP port for /metrics; 0 picks a free one; undefined: no metrics server. */
  metricsPort?: number;
  /** Interface the metrics server binds; default 127.0.0.1 (0.0.0.0 to be scraped from other hosts). */
  metricsHost?: string;
  logger?: Logger;
}

export type ResolvedAgentOptions = Required<Omit<AgentOptions, "metricsPort">> & Pick<AgentOptions, "metricsPort">;

export const DEFAULT_MAX_UPLOAD_BYTES = 1 << 30;
export const DEFAULT_MAX_SESSION_BYTES = 4 * (1 << 30);
export const DEFAULT_CALL_TIMEOUT_MS = 60_000;
export const DEFAULT_WARM_WORKERS = 1;

export function resolveAgentOptions(opts: AgentOptions): ResolvedAgentOptions {
  if (opts.boards.length === 0) throw new RangeError("an agent needs at least one board (--board cpu:key=cpu)");
  const names = new Set<string>();
  for (const b of opts.boards) {
    if (names.has(b.name)) throw new RangeError(`two boards are named "${b.name}"; give each a distinct name=`);
    names.add(b.name);
  }
  if (opts.metricsPort !== undefined && !(Number.isInteger(opts.metricsPort) && opts.metricsPort >= 0 && opts.metricsPort <= 65535)) {
    throw new RangeError(`metricsPort must be a port number (0: any free one), got ${opts.metricsPort}`);
  }
  // An agent with a token is who its token says (the tracker enforces it).
  const name = opts.name ?? (opts.security?.token ? "" : `${hostname()}-${process.pid}`);
  return {
    tracker: opts.tracker,
    security: opts.security ?? {},
    boards: opts.boards,
    name,
    workRoot: opts.workRoot ?? join(tmpdir(), `kfarm-agent-${process.pid}`),
    maxUploadBytes: opts.maxUploadBytes ?? DEFAULT_MAX_UPLOAD_BYTES,
    maxSessionBytes: opts.maxSessionBytes ?? DEFAULT_MAX_SESSION_BYTES,
    callTimeoutMs: opts.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS,
    warmWorkers: Math.max(1, opts.warmWorkers ?? DEFAULT_WARM_WORKERS),
    canaryIntervalMs: opts.canaryIntervalMs ?? DEFAULT_CANARY_INTERVAL_MS,
    metricsPort: opts.metricsPort,
    metricsHost: opts.metricsHost ?? "127.0.0.1",
    logger: opts.logger ?? componentLogger("agent", { agent: name }),
  };
}
