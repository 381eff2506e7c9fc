/**
 * The tracker: a gRPC server that registers agents and boards, queues session
 * requests, grants leases and relays session frames between hosts and board
 * workers without decoding them.
 */
import * as grpc from "@grpc/grpc-js";
import {
  AgentService, FarmError, HostService, SERVER_OPTIONS, SESSION_ID_HEADER, SESSION_TOKEN_HEADER,
  type AgentServiceHandlers, type HostServiceHandlers,
} from "../protos/index.ts";
import { AgentLinks } from "./agents.ts";
import { FarmEvents } from "./events.ts";
import { TrackerHttp } from "./http-server.ts";
import { installMetrics } from "./metrics.ts";
import { installLiveView } from "./live/feed.ts";
import type { SessionStream } from "./lease.ts";
import { resolveTrackerOptions, type ResolvedTrackerOptions, type TrackerOptions } from "./options.ts";
import { Registry, describeBoard, type Board } from "./registry.ts";
import { widenConnectionWindow, widenStreamWindow } from "./receive-window.ts";
import { Scheduler } from "./scheduler.ts";
import { buildSummary } from "./summary.ts";

export class Tracker {
  readonly options: ResolvedTrackerOptions;
  readonly registry = new Registry();
  readonly scheduler: Scheduler;
  /** What changes in the farm, for metrics, the live view and watchers. */
  readonly events: FarmEvents;
  private readonly agents: AgentLinks;
  private readonly server = new grpc.Server(SERVER_OPTIONS);
  /** The HTTP side (/metrics, live view), when `metricsPort` is set. */
  readonly http: TrackerHttp | undefined;
  private readonly startedAt = Date.now();
  private boundPort = 0;

  constructor(opts: TrackerOptions = {}) {
    this.options = resolveTrackerOptions(opts);
    const log = this.options.logger;
    this.events = new FarmEvents(log);
    this.scheduler = new Scheduler(
      this.registry,
      {
        openTimeoutMs: this.options.openTimeoutMs,
        workerReportGraceMs: this.options.workerReportGraceMs,
        defaultDeadlineMs: this.options.defaultDeadlineMs,
      },
      { assigned: (lease) => this.agents.assign(lease), ended: (lease) => this.agents.end(lease) },
      log,
      this.events,
    );
    this.agents = new AgentLinks(this.registry, this.scheduler, this.options, log, this.events);
    if (this.options.metricsPort !== undefined) this.http = new TrackerHttp(log);
    if (this.http) installMetrics(this.http, this);
    if (this.http) installLiveView(this.http, this);
    widenStreamWindow(this.server, log);
    this.server.addService(HostService.service, this.hostHandlers());
    this.server.addService(AgentService.service, this.agentHandlers());
  }

  get port(): number {
    return this.boundPort;
  }

  get address(): string {
    return `${this.options.host.includes(":") ? `[${this.options.host}]` : this.options.host}:${this.boundPort}`;
  }

  async listen(): Promise<this> {
    const target = `${this.options.host.includes(":") ? `[${this.options.host}]` : this.options.host}:${this.options.port}`;
    this.boundPort = await new Promise<number>((resolve, reject) =>
      this.server.bindAsync(target, grpc.ServerCredentials.createInsecure(), (err, port) =>
        err ? reject(new FarmError("UNAVAILABLE", `tracker cannot listen on ${target}: ${err.message}`, { cause: err })) : resolve(port),
      ),
    );
    widenConnectionWindow(this.server, this.options.logger);
    if (this.http) await this.http.listen(this.options.host, this.options.metricsPort!);
    this.options.logger.info({ address: this.address, http: this.http?.port }, "tracker listening");
    return this;
  }

  /** "host:port" of the HTTP side, or undefined without one. */
  get httpAddress(): string | undefined {
    return this.http ? `${this.options.host.includes(":") ? `[${this.options.host}]` : this.options.host}:${this.http.port}` : undefined;
  }

  /** Ends every session (DRAINED) and stops serving. */
  async close(): Promise<void> {
    this.agents.stop();
    await this.http?.close();
    for (const lease of [...this.scheduler.leases.values()]) lease.end(new FarmError("DRAINED", "the tracker is shutting down"));
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => {
        this.server.forceShutdown();
        resolve();
      }, 1000);
      this.server.tryShutdown(() => {
        clearTimeout(force);
        resolve();
      });
    });
  }

  private hostHandlers(): HostServiceHandlers {
    return {
      RequestSession: (call, callback) => {
        let settled = false;
        const waiter = this.scheduler.request(call.request, {
          grant: (lease, queuedMs) => {
            settled = true;
            callback(null, { session_id: lease.id, token: lease.token, board: describeBoard(lease.board), queued_ms: queuedMs });
          },
          fail: (err) => {
            settled = true;
            callback(err.toGrpc());
          },
        });
        call.on("cancelled", () => {
          if (waiter && !settled) this.scheduler.cancel(waiter);
        });
      },
      OpenSession: (call) => this.joinSession(call as unknown as SessionStream, "host"),
      ReleaseSession: (call, callback) => {
        const lease = this.scheduler.leases.get(call.request.session_id);
        if (lease && lease.token === call.request.token) lease.end(null);
        callback(null, {});
      },
      Summary: (call, callback) => callback(null, buildSummary(this.registry, this.scheduler, this.startedAt, call.request.key)),
      BoardCommand: (call, callback) => {
        try {
          const { board_id: id, action, operator } = call.request;
          const board = this.boardCommand(id, action, operator || call.getPeer());
          callback(null, { board: describeBoard(board) });
        } catch (err) {
          callback(FarmError.from(err).toGrpc());
        }
      },
    };
  }

  /** drain | quarantine | restore one board, as an operator asked; publishes the change. */
  boardCommand(id: string, action: string, by: string): Board {
    const board = this.registry.board(id);
    if (!board) {
      const ids = [...this.registry.boards()].map((b) => b.id);
      throw new FarmError("NOT_FOUND", `no board "${id}"; boards: ${ids.length ? ids.join(", ") : "(none attached)"}`);
    }
    let reason: string;
    if (action === "drain") {
      board.draining = true;
      reason = `drained by ${by}`;
    } else if (action === "quarantine" || action === "restore") {
      if (action === "restore") board.draining = false;
      const from = board.health.state;
      const t = board.health.apply(action === "quarantine" ? { kind: "operator_quarantine", by } : { kind: "operator_restore", by });
      reason = t?.reason ?? (action === "quarantine" ? board.health.reason : `restored by ${by}`);
      if (t) this.events.emit({ type: "health", at: Date.now(), board: board.id, key: board.key, from, to: t.to, reason });
    } else {
      throw new FarmError("INVALID_ARGUMENT", `unknown board command ${JSON.stringify(action)}; commands: drain, quarantine, restore`);
    }
    this.options.logger.info({ board: id, action, by }, reason);
    this.events.emit({ type: "board", at: Date.now(), board: describeBoard(board), change: "changed", reason });
    this.scheduler.dispatch(board.key);
    return board;
  }

  private agentHandlers(): AgentServiceHandlers {
    return {
      Attach: (call) => this.agents.attach(call),
      ServeSession: (call) => this.joinSession(call as unknown as SessionStream, "worker"),
    };
  }

  /** A host or worker stream arrives for a granted session. */
  private joinSession(call: SessionStream, side: "host" | "worker"): void {
    try {
      const id = String(call.metadata.get(SESSION_ID_HEADER)[0] ?? "");
      const token = String(call.metadata.get(SESSION_TOKEN_HEADER)[0] ?? "");
      const lease = this.scheduler.leases.get(id);
      if (!lease) throw new FarmError("NOT_FOUND", `no session "${id}" (it ended or never existed)`);
      if (lease.token !== token) throw new FarmError("PERMISSION_DENIED", `wrong token for session ${id}`);
      if (side === "host") lease.attachHost(call);
      else lease.attachWorker(call);
    } catch (err) {
      call.emit("error", FarmError.from(err).toGrpc());
    }
  }
}

export async function startTracker(opts: TrackerOptions = {}): Promise<Tracker> {
  return new Tracker(opts).listen();
}
