import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { FarmError } from "../../protos/index.ts";
import { componentLogger, isLoopbackHost, parseAddress, type ClientSecurity, type Logger, type ServerTls } from "../../runtime/index.ts";
import { DEFAULT_CANARY_INTERVAL_MS } from "./canary.ts";
import type { BoardConfig } from "./board-config.ts";
import { parseWorkerLimits, parseWorkerUids, type WorkerLimits, type WorkerNetwork } from "./sandbox.ts";

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
  /** Serve /metrics over HTTPS with this certificate and key (re-read when they change); default plain HTTP. */
  metricsTls?: ServerTls;
  /**
   * As root, the ids session workers run as: "FIRST-LAST", FIRST being their
   * group and each live worker taking one of the rest; "off": as the agent's
   * user. Default DEFAULT_WORKER_UIDS (docs/sandbox.md).
   */
  workerUids?: string;
  /** "isolated" (default): each worker in a network namespace of its own where the OS allows; "shared": the host's network. */
  workerNetwork?: WorkerNetwork;
  /** Resource limits of each worker ("nofile=1024,fsize=1g,as=off" or a mapping); unnamed ones take their defaults, 0 lifts one. */
  workerLimits?: string | Partial<WorkerLimits>;
  /**
   * As root with workers on uids of their own, each session's folder is a
   * tmpfs of this many bytes: all of a session's files together, its
   * kernels' temporary files included (docs/sandbox.md). 0: no tmpfs.
   * Default maxSessionBytes; at least maxUploadBytes.
   */
  workerDiskBytes?: number;
  /** Serve a direct lane (hosts connect straight to this agent). Default true. */
  direct?: boolean;
  /** Give each session worker a standby lane, a port of its own that the grant names (worker/standby.ts). Default true. */
  standby?: boolean;
  /** Interface of the direct lane; default 127.0.0.1 for a loopback tracker, else every interface (0.0.0.0). */
  dataHost?: string;
  /** Port of the direct lane; default 0 (any free one). */
  dataPort?: number;
  /** The host name or address (HOST, or HOST:PORT for a forwarded port) hosts reach the direct lane at; default the address the tracker sees this agent at. */
  dataAdvertise?: string;
  /** TLS for the direct lane (needed for one when the agent talks TLS to its tracker); the farm's CA must have signed it. */
  dataTls?: ServerTls;
  logger?: Logger;
}

type SandboxSettings = "workerUids" | "workerNetwork" | "workerLimits" | "workerDiskBytes";

export type ResolvedAgentOptions = Required<Omit<AgentOptions, "metricsPort" | "metricsTls" | "dataTls" | SandboxSettings>> &
  Pick<AgentOptions, "metricsPort" | "metricsTls" | "dataTls"> & {
    /** [group, last uid]; undefined: workers run as the agent's user. */
    workerUids: readonly [number, number] | undefined;
    workerNetwork: WorkerNetwork;
    /** The limits; `as` only when the operator set it (its default depends on the board kind: workerLimitsFor). */
    workerLimits: Omit<WorkerLimits, "as"> & { as?: number };
    /** Each session's tmpfs, in bytes; 0: none (where the agent cannot mount one, none either: docs/sandbox.md). */
    workerDiskBytes: number;
  };

export const DEFAULT_MAX_UPLOAD_BYTES = 1 << 30;
export const DEFAULT_MAX_SESSION_BYTES = 4 * (1 << 30);
export const DEFAULT_CALL_TIMEOUT_MS = 60_000;
export const DEFAULT_WARM_WORKERS = 1;
/** Worker ids as root: 61000 their group, 61001–61999 one per live worker (Debian keeps 60000–64999 free of accounts). */
export const DEFAULT_WORKER_UIDS = "61000-61999";
/** Open descriptors per worker: Node and gRPC need a few dozen, a kernel's files the rest. */
export const DEFAULT_WORKER_NOFILE = 1024;
/** Processes and threads per worker uid: Node runs ~12 threads, a CUDA context ~10 more; a fork bomb stops here. */
export const DEFAULT_WORKER_NPROC = 256;
/**
 * Address space per worker, by board kind; absent kinds get none. Off by
 * default everywhere: CUDA reserves a unified address range larger than the
 * RAM, and the VTA simulator's WebAssembly memories reserve ~10 GiB each,
 * so any bound that holds the kernel to the RAM breaks them (docs/sandbox.md).
 */
export const DEFAULT_WORKER_AS_BYTES: Readonly<Record<string, number>> = {};

/** The limits of a worker of board `kind` (the file-size default is the largest upload). */
export function workerLimitsFor(o: Pick<ResolvedAgentOptions, "workerLimits">, kind: string): WorkerLimits {
  return { ...o.workerLimits, as: o.workerLimits.as ?? DEFAULT_WORKER_AS_BYTES[kind] ?? 0 };
}

export function resolveAgentOptions(opts: AgentOptions): ResolvedAgentOptions {
  if (opts.boards.length === 0)
    throw new FarmError("INVALID_ARGUMENT", "an agent needs at least one board: give --board (e.g. --board cpu:key=cpu) or boards: in --config");
  const names = new Set<string>();
  for (const b of opts.boards) {
    if (names.has(b.name))
      throw new FarmError("INVALID_ARGUMENT", `--board: two boards are named "${b.name}"; give each a distinct name= (e.g. --board cpu:key=cpu,name=cpu1)`, {
        details: { option: "board", name: b.name },
      });
    names.add(b.name);
  }
  if (opts.metricsPort !== undefined && !(Number.isInteger(opts.metricsPort) && opts.metricsPort >= 0 && opts.metricsPort <= 65535)) {
    throw new FarmError("INVALID_ARGUMENT", `--metrics-port must be a port number (0: any free one), got ${opts.metricsPort}`, {
      details: { option: "metricsPort" },
    });
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
    metricsTls: opts.metricsTls,
    direct: opts.direct ?? true,
    standby: opts.standby ?? true,
    dataHost: opts.dataHost ?? (isLoopbackHost(parseAddress(opts.tracker).host) ? "127.0.0.1" : "0.0.0.0"),
    dataPort: checkPort(opts.dataPort ?? 0, "dataPort"),
    dataAdvertise: opts.dataAdvertise ?? "",
    dataTls: opts.dataTls,
    workerUids: parseWorkerUids(opts.workerUids ?? DEFAULT_WORKER_UIDS, "workerUids"),
    workerNetwork: resolveWorkerNetwork(opts.workerNetwork),
    workerLimits: resolveWorkerLimits(opts.workerLimits, opts.maxUploadBytes ?? DEFAULT_MAX_UPLOAD_BYTES),
    workerDiskBytes: resolveWorkerDisk(
      opts.workerDiskBytes,
      opts.maxSessionBytes ?? DEFAULT_MAX_SESSION_BYTES,
      opts.maxUploadBytes ?? DEFAULT_MAX_UPLOAD_BYTES,
    ),
    logger: opts.logger ?? componentLogger("agent", { agent: name }),
  };
}

function checkPort(port: number, name: string): number {
  if (!(Number.isInteger(port) && port >= 0 && port <= 65535))
    throw new FarmError("INVALID_ARGUMENT", `${name} must be a port number (0: any free one), got ${JSON.stringify(port)}`);
  return port;
}

function resolveWorkerNetwork(v: string | undefined): WorkerNetwork {
  if (v === undefined || v === "isolated" || v === "shared") return v ?? "isolated";
  throw new FarmError("INVALID_ARGUMENT", `workerNetwork must be "isolated" or "shared", got ${JSON.stringify(v)}`);
}

function resolveWorkerDisk(given: number | undefined, maxSessionBytes: number, maxUploadBytes: number): number {
  if (given === undefined) return maxSessionBytes;
  if (!Number.isSafeInteger(given) || given < 0)
    throw new FarmError("INVALID_ARGUMENT", `workerDiskBytes must be a whole number of bytes ≥ 0 (0: no per-session filesystem), got ${JSON.stringify(given)}`);
  // The worker writes an upload of up to maxUploadBytes into the session's folder: a smaller quota would fail every large one.
  if (given > 0 && given < maxUploadBytes)
    throw new FarmError(
      "INVALID_ARGUMENT",
      `workerDiskBytes (${given} bytes) is below maxUploadBytes (${maxUploadBytes}): the largest uploads could never fit; raise --worker-disk or lower --max-upload-bytes`,
    );
  return given;
}

function resolveWorkerLimits(given: string | Partial<WorkerLimits> | undefined, maxUploadBytes: number): ResolvedAgentOptions["workerLimits"] {
  const l = typeof given === "string" ? parseWorkerLimits(given, "workerLimits") : (given ?? {});
  for (const [k, v] of Object.entries(l)) {
    if (!Number.isSafeInteger(v) || v < 0)
      throw new FarmError("INVALID_ARGUMENT", `workerLimits.${k} must be a whole number ≥ 0 (0: no limit), got ${JSON.stringify(v)}`);
  }
  // A worker writes uploads of up to maxUploadBytes itself: a smaller file limit would fail them.
  if (l.fsize && l.fsize < maxUploadBytes)
    throw new FarmError(
      "INVALID_ARGUMENT",
      `workerLimits.fsize (${l.fsize} bytes) is below maxUploadBytes (${maxUploadBytes}): uploads would fail; raise it or lower --max-upload-bytes`,
    );
  return {
    nofile: l.nofile ?? DEFAULT_WORKER_NOFILE,
    nproc: l.nproc ?? DEFAULT_WORKER_NPROC,
    fsize: l.fsize ?? maxUploadBytes,
    ...(l.as !== undefined ? { as: l.as } : {}),
  };
}
