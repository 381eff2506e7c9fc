/**
 * The tracker: a gRPC server that registers agents and boards, queues session
 * requests, grants leases and relays session frames between hosts and board
 * workers without decoding them.
 */
import * as grpc from "@grpc/grpc-js";
import { join } from "node:path";
import {
  AgentService,
  FarmError,
  HostService,
  MAX_MESSAGE_BYTES,
  SESSION_ID_HEADER,
  SESSION_REQUEST_HEADER,
  SESSION_TOKEN_HEADER,
  decodeSessionRequest,
  type AgentServiceHandlers,
  type HostServiceHandlers,
  type Route,
  type SessionRequest__Output,
} from "../protos/index.ts";
import { SERVER_OPTIONS, TicketSigner, grpcServerCredentials, isLoopbackHost, traceGrant } from "../runtime/index.ts";
import { BOARD_ACTION, fromWireMessage, toWireMessage, type BoardInfo, type TokensReply, type TokensRequest__Output } from "../protos/index.ts";
import { AgentLinks } from "./agents.ts";
import { AuditLog } from "./audit.ts";
import { BoardMemory, emptyState, parseTrackerState, type BoardStanding, type TrackerState } from "./board-memory.ts";
import { DataPort } from "./data-port.ts";
import { Authorizer, sameSecret, type Caller } from "./auth.ts";
import { AGENT_MESSAGE_BYTES, CONTROL_MESSAGE_BYTES, callGate, type MethodGate } from "./call-gate.ts";
import { FarmEvents } from "./events.ts";
import { TrackerHttp } from "./http-server.ts";
import { installMetrics } from "./metrics.ts";
import { installLiveView } from "./live/feed.ts";
import type { SessionStream } from "./lease.ts";
import { resolveTrackerOptions, type ResolvedTrackerOptions, type TrackerOptions } from "./options.ts";
import { Registry, describeBoard, joinHostPort, type BoardLease } from "./registry.ts";
import { widenConnectionWindow, widenStreamWindow } from "./receive-window.ts";
import { Scheduler } from "./scheduler.ts";
import { StateStore, STATE_FILE_NAME } from "./state-store.ts";
import { SummaryEncoder, buildSummary, encodeWholeSummary } from "./summary.ts";
import { TOKEN_KINDS, type Identity, type TokenKind } from "./tokens.ts";
import { TvmPort } from "./tvm/port.ts";

/** The longest reason an operator may give with a board command (it is shown in every summary and kept in the state file). */
export const MAX_NOTE_CHARS = 200;

export class Tracker {
  readonly options: ResolvedTrackerOptions;
  readonly registry = new Registry();
  readonly scheduler: Scheduler;
  /** What changes in the farm, for metrics, the live view and watchers. */
  readonly events: FarmEvents;
  private readonly agents: AgentLinks;
  /** Tokens and who may do what (tracker/auth.ts); open when no tokens file is set. */
  readonly auth: Authorizer;
  readonly audit: AuditLog;
  /** The state file, with a state directory (tracker/state-store.ts). */
  private readonly state: StateStore<TrackerState> | undefined;
  /** What outlives a board's attachment (tracker/board-memory.ts): in memory, and in the state file when there is one. */
  private readonly memory: BoardMemory;
  private readonly server: grpc.Server;
  /** Relay lanes (tracker/data-port.ts). */
  private readonly relayLanes: DataPort;
  /** The HTTP side (/metrics, live view), when `metricsPort` is set. */
  readonly http: TrackerHttp | undefined;
  /** TVM's tracker protocol (tracker/tvm/), when `tvmPort` is set. */
  readonly tvm: TvmPort | undefined;
  private readonly startedAt = Date.now();
  /** The Summary RPC's replies, each board's part kept until it changes. */
  private readonly summaries = new SummaryEncoder();
  private boundPort = 0;
  /**
   * `/readyz` says 503 from the start of close(). It needs no "starting"
   * state: the HTTP side listens only once the gRPC port and the data port are bound.
   */
  private closing = false;

  constructor(opts: TrackerOptions = {}) {
    this.options = resolveTrackerOptions(opts);
    const log = this.options.logger;
    // First: a state file it cannot use stops the start before anything listens or watches.
    this.state = this.options.stateDir
      ? StateStore.open(join(this.options.stateDir, STATE_FILE_NAME), { parse: parseTrackerState, empty: emptyState, logger: log })
      : undefined;
    this.memory = new BoardMemory(this.state, (id) => this.registry.board(id) !== undefined);
    this.audit = new AuditLog(this.options.auditLog, log);
    this.auth = new Authorizer(this.options.tokensFile, this.audit, log);
    this.events = new FarmEvents(log);
    // One key pair per tracker process: its agents' workers check the tickets it signs (docs/architecture.md, "Tickets").
    const tickets = new TicketSigner();
    this.scheduler = new Scheduler(
      this.registry,
      { openTimeoutMs: this.options.openTimeoutMs, endGraceMs: this.options.endGraceMs },
      {
        kernelfarm: { deadlineMs: this.options.defaultDeadlineMs, fairness: "per-client" },
        tvm: { deadlineMs: this.options.tvmDeadlineMs, fairness: this.options.tvmFairness },
      },
      {
        assigned: (lease) => lease.board.agent.control.assign(lease),
        ended: (lease) => lease.board.agent.control.end(lease),
        lastLeft: (key) => this.memory.lastLeft(key),
      },
      log,
      this.events,
      tickets,
    );
    this.relayLanes = new DataPort(
      this.options.tls,
      {
        lease: (hello, caller) =>
          hello.role === "host"
            ? this.ownLease(caller, hello.session_id, hello.ticket, "open")
            : this.ticketedLease(caller, hello.session_id, hello.ticket, "serve"),
        caller: (token, peer) =>
          this.auth.callerOfToken(
            () => token,
            peer,
            "open sessions",
            "this farm needs a client token to open a session's lane: the host SDK sends its token in the lane's hello",
          ),
        fallback: (lease) => lease.board.agent.control.openRelay(lease),
      },
      log,
    );
    this.agents = new AgentLinks(
      this.registry,
      this.scheduler,
      { ...this.options, relayPort: () => this.relayLanes.port, ticketKey: tickets.publicKey },
      log,
      this.events,
      this.auth,
      this.audit,
      this.memory,
    );
    this.tvm =
      this.options.tvmPort === undefined
        ? undefined
        : new TvmPort(
            { allow: this.options.tvmAllow, keys: this.options.tvmKeys, maxSessionTimeoutMs: this.options.maxSessionTimeoutMs },
            {
              registry: this.registry,
              scheduler: this.scheduler,
              events: this.events,
              memory: this.memory,
              audit: this.audit,
              log: log.child({ component: "tvm-port" }),
            },
          );
    if (this.options.metricsPort !== undefined) {
      this.http = new TrackerHttp(log, {
        tls: this.options.tls,
        // The HTTP side shows every board, session and client: operators only, on a farm with tokens.
        guard: this.auth.enabled && !this.options.publicHttp ? (token, peer, what, onLost) => this.operatorHold(token, peer, what, onLost) : undefined,
        notReady: () => (this.closing ? "the tracker is shutting down" : undefined),
      });
    }
    if (this.http) installMetrics(this.http, this);
    if (this.http) installLiveView(this.http, this);
    this.server = new grpc.Server({ ...SERVER_OPTIONS, interceptors: [callGate(this.gates(), log)] });
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
      this.server.bindAsync(target, grpcServerCredentials(this.options.tls), (err, port) =>
        err
          ? reject(
              /EADDRINUSE/.test(err.message)
                ? new FarmError(
                    "UNAVAILABLE",
                    `tracker cannot listen on ${target}: the port is in use (another tracker?); stop it, or give another --port (0: any free port)`,
                    { cause: err },
                  )
                : new FarmError("UNAVAILABLE", `tracker cannot listen on ${target}: ${err.message}`, { cause: err }),
            )
          : resolve(port),
      ),
    );
    widenConnectionWindow(this.server, this.options.logger);
    await this.relayLanes.listen(this.options.host, this.options.dataPort);
    if (this.http) await this.http.listen(this.options.host, this.options.metricsPort!);
    if (this.tvm) await this.tvm.listen(this.options.host, this.options.tvmPort!);
    const o = this.options;
    this.options.logger.info(
      {
        address: this.address,
        dataPort: this.relayLanes.port,
        http: this.http?.port,
        tls: !!o.tls,
        mtls: !!o.tls?.clientCaFile,
        tokens: o.tokensFile ?? null,
        audit: o.auditLog ?? null,
        state: this.state?.path ?? null,
      },
      "tracker listening",
    );
    const absent = this.memory.absentIds();
    if (absent.length > 0)
      this.options.logger.info(
        { boards: absent },
        `remembered ${absent.length} board(s) from ${this.state?.path}; each takes its drain, quarantine and health back when its agent attaches`,
      );
    if (this.tvm) {
      const a = this.tvm.admission;
      o.logger[a.beyondLoopback ? "warn" : "info"](
        { tvmPort: this.tvm.port, allow: a.allow, keys: a.keys ?? "all" },
        `TVM port ${this.tvmAddress}: TVM servers and clients send no token${o.tls ? " and no TLS" : ""}; it admits peers from ${a.allow.join(", ")} and serves ${a.keys?.length ? `keys ${a.keys.join(", ")}` : "every key"} (docs/security.md, "TVM's tracker protocol")`,
      );
    }
    if (!isLoopbackHost(o.host) && !(o.tls && o.tokensFile)) {
      o.logger.warn(
        { host: o.host },
        `--insecure: serving ${o.host} without ${o.tls ? "tokens" : o.tokensFile ? "TLS" : "TLS or tokens"}; anyone who reaches this port can run code on every board`,
      );
    }
    return this;
  }

  /** The data port (relay lanes), once listening. */
  get dataPort(): number {
    return this.relayLanes.port;
  }

  /** "host:port" of the TVM port, or undefined without one. */
  get tvmAddress(): string | undefined {
    return this.tvm ? joinHostPort(this.options.host, this.tvm.port) : undefined;
  }

  /** "host:port" of the HTTP side, or undefined without one. */
  get httpAddress(): string | undefined {
    return this.http ? `${this.options.host.includes(":") ? `[${this.options.host}]` : this.options.host}:${this.http.port}` : undefined;
  }

  /** Fails every waiting request (UNAVAILABLE), ends every session (DRAINED), writes what it remembers, and stops serving. */
  async close(): Promise<void> {
    this.closing = true;
    this.agents.stop();
    this.auth.close();
    this.relayLanes.close();
    await this.http?.close();
    // TVM's clients are not answered but disconnected, so that they reconnect and ask again (tracker/tvm/port.ts).
    this.tvm?.stop();
    // Requests first: the boards that the leases' ends hand back must not be granted to them.
    this.scheduler.close(
      (key, waitedMs) =>
        new FarmError(
          "UNAVAILABLE",
          `the tracker at ${this.address} is shutting down${key ? `; this request for key "${key}" left its queue after ${waitedMs} ms` : ""}: request again when it is back (its agents re-attach within a second of it listening)`,
        ),
    );
    for (const lease of [...this.scheduler.leases.values()])
      lease.end(new FarmError("DRAINED", `the tracker at ${this.address} is shutting down, and this session with it; request a new one when it is back`));
    // After the leases ended DRAINED: a TVM server's lease ends as every other, not as its connection's loss.
    this.tvm?.close();
    await this.state?.close();
    this.audit.close();
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

  /**
   * What each method needs before its body is read (tracker/call-gate.ts):
   * the same token checks the handlers make, from the metadata alone, and
   * each method's largest legitimate message. The session streams carry
   * 1 MiB chunks in their frames, so they keep the server's limit.
   */
  private gates(): Map<string, MethodGate> {
    const token = (doing: string, maxMessageBytes: number): MethodGate => ({
      maxMessageBytes,
      admit: (metadata, peer) => void this.auth.caller(metadata, peer, doing),
    });
    const host = HostService.service;
    const agent = AgentService.service;
    return new Map([
      [host.Session.path, token("request sessions", MAX_MESSAGE_BYTES)],
      [host.ReleaseSession.path, token("release sessions", CONTROL_MESSAGE_BYTES)],
      [host.Summary.path, token("read the summary", CONTROL_MESSAGE_BYTES)],
      [host.BoardCommand.path, token("send board commands", CONTROL_MESSAGE_BYTES)],
      [host.Tokens.path, token("administer tokens", CONTROL_MESSAGE_BYTES)],
      [agent.Attach.path, token("attach an agent", AGENT_MESSAGE_BYTES)],
      // A worker holds no token: its session's ticket is its credential.
      [
        agent.ServeSession.path,
        {
          maxMessageBytes: MAX_MESSAGE_BYTES,
          admit: (metadata, peer) =>
            void this.ticketedLease(
              { name: "worker", kind: "anonymous", peer },
              String(metadata.get(SESSION_ID_HEADER)[0] ?? ""),
              String(metadata.get(SESSION_TOKEN_HEADER)[0] ?? ""),
              "serve",
            ),
        },
      ],
    ]);
  }

  private hostHandlers(): HostServiceHandlers {
    return {
      Session: (call) => this.session(call as unknown as SessionStream),
      ReleaseSession: (call, callback) => {
        try {
          const caller = this.auth.caller(call.metadata, call.getPeer(), "release sessions");
          const lease = this.ownLease(caller, call.request.session_id, call.request.token, "release");
          lease.end(null);
          this.audit.record({ event: "release", who: caller.name, kind: caller.kind, peer: caller.peer, session: lease.id, board: lease.board.id });
          callback(null, {});
        } catch (err) {
          callback(FarmError.from(err).toGrpc());
        }
      },
      Summary: (call, callback) => {
        try {
          this.auth.caller(call.metadata, call.getPeer(), "read the summary");
          const { key, health_history: history } = call.request;
          callback(
            null,
            history
              ? encodeWholeSummary(buildSummary(this.registry, this.scheduler, this.startedAt, key, true))
              : this.summaries.encode(this.registry, this.scheduler, this.startedAt, key),
          );
        } catch (err) {
          callback(FarmError.from(err).toGrpc());
        }
      },
      BoardCommand: (call, callback) => {
        try {
          const caller = this.auth.caller(call.metadata, call.getPeer(), "send board commands");
          // Who asks comes first: a caller who may not command boards hears that, whatever its action says (named in
          // the refusal when it is one); an action outside the enum is refused only to a caller who may ask.
          const wire = call.request.action;
          this.auth.requireKind(caller, ["operator"], `${BOARD_ACTION.names.find((n) => BOARD_ACTION.toWire(n) === wire) ?? "command"} boards`);
          const action = BOARD_ACTION.fromWire(wire, "the board command");
          const { board_id: id, operator, reason } = call.request;
          // With tokens, who asked is the token's name, not what the request says.
          const by = caller.identity ? caller.name : operator || call.getPeer();
          const board = this.boardCommand(id, action, by, reason);
          this.audit.record({
            event: "board_command",
            who: caller.name,
            kind: caller.kind,
            peer: caller.peer,
            board: id,
            action,
            ...(reason ? { reason } : {}),
          });
          // Answered once it is in the state file: a command that was answered survives a restart, even a crash.
          this.memory.flush().then(
            () => callback(null, { board: toWireMessage("farm.v1.BoardInfo", board) }),
            (err) => {
              const e = FarmError.from(err);
              callback(new FarmError(e.code, `board ${id}: the ${action} took effect, but ${e.message}`).toGrpc());
            },
          );
        } catch (err) {
          callback(FarmError.from(err).toGrpc());
        }
      },
      Tokens: (call, callback) => {
        try {
          const caller = this.auth.caller(call.metadata, call.getPeer(), "administer tokens");
          this.auth.requireKind(caller, ["operator"], "administer tokens");
          const reply = this.tokens(caller, fromWireMessage("farm.v1.TokensRequest", call.request, "the tokens request"));
          callback(null, toWireMessage("farm.v1.TokensReply", reply));
        } catch (err) {
          callback(FarmError.from(err).toGrpc());
        }
      },
    };
  }

  /**
   * HostService.Session: the request (in the metadata) waits in its key's
   * queue on this stream; the grant is the stream's first message, and the
   * stream then lives as long as the lease (tracker/lease.ts).
   */
  private session(call: SessionStream): void {
    traceGrant("tracker: Session stream handled");
    let settled = false;
    let caller: Caller;
    let req: SessionRequest__Output;
    let route: Route;
    const refuse = (err: unknown) => call.emit("error", FarmError.from(err).toGrpc());
    try {
      caller = this.auth.caller(call.metadata, call.getPeer(), "request sessions");
      const encoded = call.metadata.get(SESSION_REQUEST_HEADER)[0];
      if (!Buffer.isBuffer(encoded))
        throw new FarmError("INVALID_ARGUMENT", `a Session stream carries its request in the ${SESSION_REQUEST_HEADER} metadata (an encoded SessionRequest)`);
      let decoded: SessionRequest__Output;
      try {
        decoded = decodeSessionRequest(encoded);
      } catch (err) {
        if (err instanceof FarmError) throw err;
        throw new FarmError("INVALID_ARGUMENT", `the ${SESSION_REQUEST_HEADER} metadata is not a SessionRequest: ${(err as Error).message}`);
      }
      route = decoded.route;
      req = this.auth.sessionRequest(caller, decoded, this.options.maxSessionTimeoutMs);
    } catch (err) {
      refuse(err);
      return;
    }
    // A waiting request ends with its token (revoked while it waits).
    const release = this.auth.hold(caller, (err) => {
      if (settled) return;
      settled = true;
      if (waiter) this.scheduler.cancel(waiter);
      refuse(err);
    });
    const waiter = this.scheduler.request(
      req,
      {
        grant: (lease, queuedMs) => {
          release();
          if (settled) return lease.end(new FarmError("CANCELLED", `session ${lease.id}: its request had already ended`));
          settled = true;
          this.audit.record({
            event: "grant",
            who: caller.name,
            kind: caller.kind,
            peer: caller.peer,
            session: lease.id,
            board: lease.board.id,
            key: lease.board.key,
            priority: req.priority,
            sessionTimeoutMs: req.session_timeout_ms,
            route: lease.route,
          });
          const dropHold = this.auth.hold(caller, (err) => lease.end(err));
          lease.whenEnded(() => {
            dropHold();
            this.audit.record({
              event: "session_end",
              who: caller.name,
              kind: caller.kind,
              session: lease.id,
              board: lease.board.id,
              reason: lease.reason?.code ?? "OK",
              lane: lease.lane ?? null,
            });
          });
          const data = lease.board.agent.data;
          lease.grant(call, {
            session_id: lease.id,
            board: describeBoard(lease.board),
            queued_ms: queuedMs,
            route: lease.route,
            ticket: lease.token,
            direct_address: data && (lease.route === "direct" || lease.route === "auto") ? joinHostPort(data.host, data.port) : "",
            worker_address: data && lease.lanePort ? joinHostPort(data.host, lease.lanePort) : "",
            relay_port: this.relayLanes.port,
            session_timeout_ms: lease.timeouts.sessionTimeoutMs,
            lane_tls: data?.tls ?? false,
            end_grace_ms: lease.timeouts.endGraceMs,
          });
          traceGrant("tracker: grant written");
        },
        fail: (err) => {
          release();
          if (settled) return;
          settled = true;
          refuse(err);
        },
      },
      caller.identity?.id,
      route,
    );
    call.on("cancelled", () => {
      release();
      if (waiter && !settled) this.scheduler.cancel(waiter);
    });
    // Queued: the response headers tell the host so, and a stream that breaks from here on is the tracker going away while it waited, not a tracker it never reached (host-sdk/tracker-client.ts).
    if (waiter && !settled) call.sendMetadata(new grpc.Metadata());
  }

  /** The live lease `id` if `ticket` is its ticket; PERMISSION_DENIED (audited) otherwise. */
  private ticketedLease(caller: Caller, id: string, ticket: string, doing: string): BoardLease {
    const lease = this.scheduler.leases.get(id);
    if (!lease) throw new FarmError("NOT_FOUND", `no session "${id}" (it ended or never existed)`);
    if (!sameSecret(lease.token, ticket))
      throw this.auth.refuse(new FarmError("PERMISSION_DENIED", `wrong session token for session ${id}`), caller, `${doing} a session`, { session: id });
    return lease;
  }

  /** ticketedLease(), and `caller` must be the token the session was granted to. */
  private ownLease(caller: Caller, id: string, ticket: string, doing: string): BoardLease {
    const lease = this.ticketedLease(caller, id, ticket, doing);
    if (lease.owner !== undefined && lease.owner !== caller.identity?.id) {
      throw this.auth.refuse(
        new FarmError("PERMISSION_DENIED", `session ${id} was granted to another token, not to '${caller.name}'`),
        caller,
        `${doing} a session`,
        { session: id },
      );
    }
    return lease;
  }

  /** Token administration over gRPC (operator tokens), on the tokens file the tracker watches. */
  private tokens(caller: Caller, req: TokensRequest__Output): TokensReply {
    const file = this.auth.store?.file;
    if (!file) throw new FarmError("INVALID_ARGUMENT", "this tracker runs without tokens (no --tokens FILE): there is nothing to administer");
    const info = (t: Identity) => ({
      id: t.id,
      name: t.name,
      kind: t.kind,
      keys: t.keys,
      has_max_priority: t.maxPriority !== null,
      max_priority: t.maxPriority ?? 0,
      max_session_timeout_ms: t.maxSessionTimeoutMs ?? 0,
      created_at_ms: t.createdAtMs,
      expires_at_ms: t.expiresAtMs ?? 0,
      revoked_at_ms: t.revokedAtMs ?? 0,
    });
    if (req.action === "list") return { tokens: file.list().map(info) };
    if (req.action === "create") {
      if (!TOKEN_KINDS.includes(req.kind as TokenKind))
        throw new FarmError("INVALID_ARGUMENT", `token kind must be one of ${TOKEN_KINDS.join(", ")}, got ${JSON.stringify(req.kind)}`);
      const { record, token } = file.create({
        name: req.name,
        kind: req.kind as TokenKind,
        keys: req.keys,
        maxPriority: req.has_max_priority ? req.max_priority : null,
        maxSessionTimeoutMs: req.max_session_timeout_ms || null,
        expiresAtMs: req.expires_at_ms || null,
      });
      this.auth.store!.refresh();
      this.audit.record({
        event: "token_create",
        who: caller.name,
        kind: caller.kind,
        peer: caller.peer,
        token: record.name,
        tokenKind: record.kind,
        keys: record.keys,
      });
      return { token, tokens: [info(record)] };
    }
    if (req.action === "revoke") {
      const record = file.revoke(req.name);
      // Now, not at the next poll of the file: what it holds ends before this answer.
      this.auth.store!.refresh();
      this.audit.record({ event: "token_revoke", who: caller.name, kind: caller.kind, peer: caller.peer, token: record.name, tokenKind: record.kind });
      return { tokens: [info(record)] };
    }
    throw new FarmError("INVALID_ARGUMENT", `unknown token action ${JSON.stringify(req.action)}; actions: create, list, revoke`);
  }

  /** An operator's token for the HTTP side; returns the release of its hold (a live-view socket ends with the token). */
  private operatorHold(token: () => string | undefined, peer: string, what: string, onLost?: (err: FarmError) => void): () => void {
    const caller = this.auth.callerOfToken(token, peer, what);
    this.auth.requireKind(caller, ["operator"], what);
    return onLost ? this.auth.hold(caller, onLost) : () => {};
  }

  /**
   * drain | quarantine | restore one board, as an operator asked, with the
   * operator's `note` (why) in the reason; publishes the change and hands it
   * to what the tracker remembers. A board the tracker remembers but that is
   * not attached takes the command too: it applies when the board comes back.
   */
  boardCommand(id: string, action: string, by: string, note = ""): BoardInfo {
    if (!["drain", "quarantine", "restore"].includes(action)) {
      throw new FarmError("INVALID_ARGUMENT", `unknown board command ${JSON.stringify(action)}; commands: drain, quarantine, restore`);
    }
    if (note.length > MAX_NOTE_CHARS || /[\r\n]/.test(note)) {
      throw new FarmError(
        "INVALID_ARGUMENT",
        `a board command's reason is one line of at most ${MAX_NOTE_CHARS} characters (got ${note.length}${/[\r\n]/.test(note) ? ", with a line break" : ""})`,
      );
    }
    const board = this.registry.board(id);
    const target: BoardStanding | undefined = board ?? this.memory.absent(id);
    if (!target) {
      const ids = [...this.registry.boards()].map((b) => b.id);
      const absent = this.memory.absentIds();
      throw new FarmError(
        "NOT_FOUND",
        `no board "${id}"; boards: ${ids.length ? ids.join(", ") : "(none attached)"}${absent.length ? `; remembered, not attached: ${absent.join(", ")}` : ""}`,
      );
    }
    let reason: string;
    if (action === "drain") {
      target.drain = `drained by ${by}${note ? `: ${note}` : ""}`;
      reason = target.drain;
    } else {
      if (action === "restore") target.drain = "";
      const from = target.health.state;
      const t = target.health.apply(action === "quarantine" ? { kind: "operator_quarantine", by, note } : { kind: "operator_restore", by });
      reason = t?.reason ?? (action === "quarantine" ? target.health.reason : `restored by ${by}`);
      if (t && board) this.events.emit({ type: "health", at: Date.now(), board: id, key: target.key, from, to: t.to, reason });
    }
    this.memory.remember(target);
    this.options.logger.info({ board: id, action, by, attached: !!board }, reason);
    if (!board) return this.memory.describeAbsent(target);
    this.events.emit({ type: "board", at: Date.now(), board: describeBoard(board), change: "changed", reason });
    this.scheduler.dispatch(board.key);
    return describeBoard(board);
  }

  private agentHandlers(): AgentServiceHandlers {
    return {
      Attach: (call) => this.agents.attach(call),
      ServeSession: (call) => this.serveSession(call as unknown as SessionStream),
    };
  }

  /** A board's ServeSession stream (grpc route; its agent opens it for the worker): it shows the session's ticket alone. */
  private serveSession(call: SessionStream): void {
    try {
      const id = String(call.metadata.get(SESSION_ID_HEADER)[0] ?? "");
      const ticket = String(call.metadata.get(SESSION_TOKEN_HEADER)[0] ?? "");
      this.ticketedLease({ name: "worker", kind: "anonymous", peer: call.getPeer() }, id, ticket, "serve").attachWorkerStream(call);
    } catch (err) {
      call.emit("error", FarmError.from(err).toGrpc());
    }
  }
}

export async function startTracker(opts: TrackerOptions = {}): Promise<Tracker> {
  return new Tracker(opts).listen();
}
