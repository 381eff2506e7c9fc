/**
 * The agent's Prometheus metrics (`kfarm agent --metrics-port`): an HTTP
 * server, or HTTPS with `--metrics-tls-cert/--metrics-tls-key` (credentials.ts
 * `httpServer`, which re-reads the certificate when it is rotated), with
 * `GET /metrics` on this agent's own prom-client `Registry`, and the probes
 * `/healthz` and `/readyz` (runtime/probes.ts; ready = attached to its tracker).
 * docs/metrics.md lists every metric.
 *
 * Calls and their errors happen in session worker processes: each worker
 * counts them with integer increments and reports the deltas over its channel (worker.proto) at most
 * once a second and at every session's end (`{ t: "counters" }`, worker/main.ts);
 * the pool hands them to its board's `BoardMetrics`. A worker killed mid-session
 * (crash, call timeout) loses at most its last second of counts.
 *
 * Labels: board (this agent's boards), kind, state, reason and code (FarmError
 * codes): bounded by boards × codes.
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import { FarmError } from "../../protos/index.ts";
import { answerProbe, httpServer, isProbePath, type Logger, type Readiness, type ServerTls } from "../../runtime/index.ts";
import type { RequestCounts } from "../common/request-counters.ts";

/** Worker starts: a CPU worker takes ~0.3 s, a CUDA one ~1 s (its context). */
export const WORKER_START_BUCKETS_S = [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30];
/** The process metrics' name prefix. */
export const AGENT_PROCESS_METRICS_PREFIX = "kernelfarm_agent_";

/** What one board's pool reports. */
export interface BoardMetrics {
  /** Counts a worker sent (deltas since its last report). */
  counted(counts: RequestCounts): void;
  /** A worker process was forked. */
  workerSpawned(): void;
  /** A worker said ready, `seconds` after it was forked. */
  workerReady(seconds: number): void;
  /** A session ended on this board: "OK" or the FarmError code. */
  sessionEnded(reason: string): void;
  /** How the pool's workers are read at scrape time: count per state. */
  watchWorkers(read: () => Readonly<Record<string, number>>): void;
}

export interface AgentMetricsOptions {
  /** Node process metrics (`kernelfarm_agent_process_*`, `kernelfarm_agent_nodejs_*`); default true. */
  processMetrics?: boolean;
  /** HTTPS with these files (re-read when they change); default plain HTTP. */
  tls?: ServerTls;
  /** What `/readyz` says. */
  notReady: Readiness;
}

export class AgentMetrics {
  readonly register = new Registry();
  private readonly workerReaders = new Map<string, () => Readonly<Record<string, number>>>();
  private readonly calls: Counter<"board" | "kind">;
  private readonly callErrors: Counter<"board" | "kind" | "code">;
  private readonly timeEvaluations: Counter<"board" | "kind">;
  private readonly sessions: Counter<"board" | "kind" | "reason">;
  private readonly workerStarts: Counter<"board">;
  private readonly workerStartSeconds: Histogram<"board">;
  private readonly connected: Gauge;
  private server: Server | undefined;
  private stopWatching: () => void = () => {};
  private boundPort = 0;
  /** "https" with `tls`, else "http". */
  readonly scheme: "https" | "http";

  constructor(
    private readonly log: Logger,
    private readonly opts: AgentMetricsOptions,
  ) {
    this.scheme = opts.tls ? "https" : "http";
    const registers = [this.register];
    const readers = this.workerReaders;
    this.calls = new Counter({
      name: "kernelfarm_agent_calls_total",
      help: "Kernel calls requested, by board (refused ones included).",
      labelNames: ["board", "kind"] as const,
      registers,
    });
    this.callErrors = new Counter({
      name: "kernelfarm_agent_call_errors_total",
      help: "Calls and time evaluations that failed, by board and FarmError code.",
      labelNames: ["board", "kind", "code"] as const,
      registers,
    });
    this.timeEvaluations = new Counter({
      name: "kernelfarm_agent_time_evaluations_total",
      help: "time_evaluator requests, by board.",
      labelNames: ["board", "kind"] as const,
      registers,
    });
    this.sessions = new Counter({
      name: "kernelfarm_agent_sessions_total",
      help: 'Sessions ended on this agent, by board and reason ("OK" or the FarmError code).',
      labelNames: ["board", "kind", "reason"] as const,
      registers,
    });
    new Gauge({
      name: "kernelfarm_agent_workers",
      help: "Session worker processes, by board and state (starting, idle, serving, exiting).",
      labelNames: ["board", "state"] as const,
      registers,
      collect() {
        this.reset();
        for (const [board, read] of readers) for (const [state, n] of Object.entries(read())) this.set({ board, state }, n);
      },
    });
    this.workerStarts = new Counter({
      name: "kernelfarm_agent_worker_starts_total",
      help: "Session worker processes forked, by board.",
      labelNames: ["board"] as const,
      registers,
    });
    this.workerStartSeconds = new Histogram({
      name: "kernelfarm_agent_worker_start_seconds",
      help: "From forking a session worker to its ready (runtime, backend, tracker connection), by board.",
      labelNames: ["board"] as const,
      buckets: WORKER_START_BUCKETS_S,
      registers,
    });
    this.connected = new Gauge({ name: "kernelfarm_agent_tracker_connected", help: "1 while the agent is attached to the tracker, else 0.", registers });
    this.connected.set(0);
    if (opts.processMetrics ?? true) collectDefaultMetrics({ register: this.register, prefix: AGENT_PROCESS_METRICS_PREFIX });
  }

  /** The metrics of one board; its series exist (at 0) from now on. */
  board(board: string, kind: string): BoardMetrics {
    const { calls, callErrors, timeEvaluations, sessions, workerStarts, workerStartSeconds, workerReaders } = this;
    calls.inc({ board, kind }, 0);
    timeEvaluations.inc({ board, kind }, 0);
    workerStarts.inc({ board }, 0);
    return {
      counted(counts) {
        if (counts.calls > 0) calls.inc({ board, kind }, counts.calls);
        if (counts.timeEvaluations > 0) timeEvaluations.inc({ board, kind }, counts.timeEvaluations);
        for (const [code, n] of Object.entries(counts.errors)) {
          // Codes come from our own worker; anything else is folded into INTERNAL rather than a new series.
          if (n && n > 0) callErrors.inc({ board, kind, code: FarmError.isCode(code) ? code : "INTERNAL" }, n);
        }
      },
      workerSpawned: () => workerStarts.inc({ board }),
      workerReady: (seconds) => workerStartSeconds.observe({ board }, seconds),
      sessionEnded: (reason) => sessions.inc({ board, kind, reason: reason === "OK" || FarmError.isCode(reason) ? reason : "INTERNAL" }),
      watchWorkers: (read) => void workerReaders.set(board, read),
    };
  }

  trackerConnected(connected: boolean): void {
    this.connected.set(connected ? 1 : 0);
  }

  /** The exposition text, as `/metrics` serves it. */
  scrape(): Promise<string> {
    return this.register.metrics();
  }

  get port(): number {
    return this.boundPort;
  }

  /** Serves `GET /metrics` and the probes on `host:port` (0: any free port); resolves with the bound port. */
  async listen(host: string, port: number): Promise<number> {
    // handle() answers its own failures; a throw it did not foresee still answers 500 here rather than
    // leaving a rejection nobody handles, which would end the agent.
    const { server, stopWatching } = httpServer(this.opts.tls, (req, res) => void this.handle(req, res).catch((err: unknown) => this.failed(res, err)));
    this.stopWatching = stopWatching;
    server.headersTimeout = 10_000;
    server.requestTimeout = 30_000;
    await new Promise<void>((resolve, reject) => {
      const onError = (err: Error) => reject(new FarmError("UNAVAILABLE", `agent cannot serve metrics on ${host}:${port}: ${err.message}`, { cause: err }));
      server.once("error", onError);
      server.listen(port, host, () => {
        server.off("error", onError);
        resolve();
      });
    });
    this.server = server;
    this.boundPort = (server.address() as { port: number }).port;
    return this.boundPort;
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    this.stopWatching();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private failed(res: ServerResponse, err: unknown): void {
    this.log.error({ err: (err as Error).message }, "metrics request failed");
    if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
    res.end(`internal error: ${(err as Error).message}\n`);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // A target such as `//` or `//:99999` is an authority without a host to `new URL`, which throws:
    // no page has that path (tracker/http-server.ts's pathOf says the same).
    let path: string;
    try {
      path = new URL(req.url ?? "/", "http://agent").pathname;
    } catch {
      path = req.url ?? "";
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD", "content-type": "text/plain" }).end("only GET and HEAD\n");
      return;
    }
    if (isProbePath(path)) {
      answerProbe(path, res, this.opts.notReady);
      return;
    }
    if (path !== "/metrics") {
      res.writeHead(404, { "content-type": "text/plain" }).end(`no such page: ${path}; try /metrics\n`);
      return;
    }
    try {
      const body = await this.scrape();
      res.writeHead(200, { "content-type": this.register.contentType, "cache-control": "no-store" }).end(body);
    } catch (err) {
      this.log.error({ err: (err as Error).message }, "metrics scrape failed");
      if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
      res.end(`internal error: ${(err as Error).message}\n`);
    }
  }
}
