/**
 * The agent's side of session lanes (runtime/lane.ts, docs/architecture.md
 * "Lanes"): its direct-lane port, where hosts connect with their session's
 * ticket; its dialling of the tracker's data port for relay lanes; and its
 * ServeSession streams to the tracker for grpc lanes. Whatever the route, the
 * session's worker gets a socket, passed on its channel (SCM_RIGHTS,
 * device-agent/common/handle-passing.ts): the lane's own socket, so that after
 * the handshake no other process touches the bytes — or, where the agent must
 * stay in the middle, one end of a unix socket pair whose other end the agent
 * moves on (device-agent/agent/lane-pair.ts): TLS, which the agent terminates
 * (workers hold no key), and the grpc route, whose stream the agent holds
 * (workers have no way to the tracker).
 *
 * A ticket opens one lane, once (device-agent/common/tickets.ts). A host may also
 * reach the worker without the agent: at the worker's own standby lane
 * (device-agent/worker/standby.ts), which the grant names first.
 *
 * The agent reads no byte past a hello: the welcome comes from the worker
 * (direct lane) or is read by it (relay lane), so the host sends its frames
 * only once the socket is in the worker. (Bytes the agent read and had not
 * handed on would be lost with the hand-over.) A grpc lane has no hello and
 * no welcome: the stream's metadata carries the ticket, and the tracker
 * relays the host's frames once both streams are there.
 */
import type { Server, Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import * as grpc from "@grpc/grpc-js";
import { AgentService, FarmError, SESSION_ID_HEADER, SESSION_TOKEN_HEADER, encodeLaneHello, type AgentServiceClient, type Lane } from "../../protos/index.ts";
import {
  HELLO_TIMEOUT_MS,
  connectSocket,
  framed,
  makeClient,
  parseAddress,
  socketServer,
  type ClientSecurity,
  type Logger,
  type ServerTls,
} from "../../runtime/index.ts";
import { Tickets, admitHost } from "../common/tickets.ts";
import { bridgeStream, pipeSockets, socketPair, type ServeStream } from "./lane-pair.ts";
import { TVM_RPC_DUPLICATE, TVM_RPC_MISMATCH, parseTvmClientKey, refuseTvm, sniffTvm, stopReading, type TvmHandshake } from "./tvm-door.ts";

export interface LaneHooks {
  /** Gives the session's worker its lane; false when no worker serves the session (any more). */
  hand(sessionId: string, socket: Socket, rest: Buffer, kind: Lane | "tvm"): boolean;
  /** The host reached the worker directly (the tracker is told). */
  opened(sessionId: string): void;
  /** The session's worker broke its lane's framing (a PROTOCOL_ERROR the grpc bridge cut it for): the pool ends the session with it. */
  broke(sessionId: string, error: FarmError): void;
}

export interface AgentLanesOptions {
  /** TLS for the direct lane; without it the lane is plaintext. */
  tls?: ServerTls;
  /** How the agent reaches the tracker (relay lanes and grpc lanes). */
  security: ClientSecurity;
  /** The tracker's gRPC address, HOST:PORT (its data port is on the same host). */
  tracker: string;
  /** Where socket pairs (TLS and grpc lanes) are made: the agent's private scratch folder. */
  workRoot: string;
  /** The agent serves a tvm board: TVM clients connect to the direct-lane port too (device-agent/agent/tvm-door.ts). */
  tvm?: boolean;
}

export class AgentLanes {
  private readonly tickets = new Tickets();
  private server: Server | undefined;
  private stopWatching = () => {};
  private readonly open = new Set<Socket>();
  /** The agent's ends of the pairs of grpc lanes: their streams end with them. */
  private readonly bridged = new Set<Socket>();
  /** The grpc lanes' connection to the tracker: not the Attach stream's, whose heartbeats must not queue behind a session's bulk data. */
  private sessions: AgentServiceClient | undefined;
  /** The tracker's data port, from its Registered message. */
  relayPort = 0;

  constructor(
    private readonly opts: AgentLanesOptions,
    private readonly hooks: LaneHooks,
    private readonly log: Logger,
  ) {}

  /** Opens the direct-lane port; returns its port. */
  listen(host: string, port: number): Promise<number> {
    const made = socketServer(this.opts.tls, (socket) => void this.accept(socket));
    this.server = made.server;
    this.stopWatching = made.stopWatching;
    return new Promise((resolve, reject) => {
      made.server.once("error", (err) =>
        reject(new FarmError("UNAVAILABLE", `the agent cannot open its direct-lane port on ${host}:${port}: ${err.message} (--data-port)`, { cause: err })),
      );
      made.server.listen(port, host, () => resolve((made.server.address() as { port: number }).port));
    });
  }

  get secure(): boolean {
    return !!this.opts.tls;
  }

  /**
   * The agent (re)attached to the tracker: grpc lanes take a new connection,
   * dialled now so that a grant does not wait for its handshake. The old one
   * may be dead without knowing it (a partition: tracker-link.ts), and its
   * sessions were abandoned with the link.
   */
  trackerAttached(): void {
    this.sessions?.close();
    this.sessions = makeClient<AgentServiceClient>(
      AgentService,
      this.opts.tracker,
      this.opts.security,
      {
        "grpc.initial_reconnect_backoff_ms": 100,
        "grpc.max_reconnect_backoff_ms": 500,
      },
      { reloadCertificates: true },
    );
    this.sessions.getChannel().getConnectivityState(true);
  }

  /** A session was assigned to one of this agent's boards: its ticket will open its lane. */
  expect(sessionId: string, ticket: string, route: string): void {
    this.tickets.expect(sessionId, ticket, route);
    if (route === "relay") void this.dialRelay(sessionId);
    else if (route === "grpc") void this.serveSession(sessionId);
  }

  /** The session ended: its ticket opens nothing any more. */
  forget(sessionId: string): void {
    this.tickets.forget(sessionId);
  }

  private async accept(socket: Socket): Promise<void> {
    this.open.add(socket);
    socket.once("close", () => this.open.delete(socket));
    if (this.opts.tvm) {
      let tvm;
      try {
        tvm = await sniffTvm(socket, HELLO_TIMEOUT_MS);
      } catch (err) {
        this.log.info(
          { peer: `${socket.remoteAddress}:${socket.remotePort}`, err: (err as Error).message },
          "direct lane: connection dropped before its hello",
        );
        socket.destroy();
        return;
      }
      if (tvm) return this.acceptTvm(socket, tvm);
      // A kernelfarm host: its bytes are back in the socket, for the lane's reader that admitHost attaches now.
      const admitted = this.admit(socket);
      socket.resume();
      return admitted;
    }
    return this.admit(socket);
  }

  /**
   * A TVM client with its match key (`<session id>:<ticket>`): admitted as a
   * host's hello would be, its socket handed to the session's worker, which
   * answers TVM's handshake and runs TVM's server loop on it. Refused with
   * TVM's MISMATCH (the client's "cannot find server that matches key").
   */
  private async acceptTvm(socket: Socket, handshake: TvmHandshake): Promise<void> {
    const peer = `${socket.remoteAddress}:${socket.remotePort}`;
    let sessionId = "";
    try {
      const key = parseTvmClientKey(handshake.key);
      sessionId = key.sessionId;
      await this.tickets.admit({ session_id: key.sessionId, ticket: key.ticket, role: "host", token: "" });
      stopReading(socket);
      this.open.delete(socket);
      if (!this.hooks.hand(sessionId, socket, handshake.bytes, "tvm")) throw new FarmError("NOT_FOUND", `session ${sessionId} has no worker any more`);
      this.hooks.opened(sessionId);
    } catch (err) {
      const e = FarmError.from(err);
      this.log.info({ peer, session: sessionId || undefined, code: e.code }, `TVM client refused at the direct-lane port: ${e.message}`);
      refuseTvm(socket, /ticket is used/.test(e.message) ? TVM_RPC_DUPLICATE : TVM_RPC_MISMATCH);
    }
  }

  private async admit(socket: Socket): Promise<void> {
    await admitHost(socket, this.tickets, "direct lane", this.log, async (sessionId, lane) => {
      // A TLS socket stays here (piped to the worker through a pair); a plain one goes to the worker.
      const encrypted = !!(socket as TLSSocket).encrypted;
      const { socket: raw, rest } = lane.detach({ toAnotherProcess: !encrypted });
      // Handed on (a plain socket is closed here once sent) or piped (TLS, closed with its pair): not ours to close.
      this.open.delete(socket);
      const handed = encrypted
        ? await this.throughPair(sessionId, "direct", (mine) => pipeSockets(raw, mine, rest))
        : this.hooks.hand(sessionId, raw, rest, "direct");
      // Refused on the lane's socket, which is still the agent's.
      if (!handed) throw new FarmError("NOT_FOUND", `session ${sessionId} has no worker any more`);
      this.hooks.opened(sessionId);
    });
  }

  /** Dials the tracker's data port for a session's worker (relay route, or an auto route's fallback). */
  async dialRelay(sessionId: string): Promise<void> {
    const ticket = this.tickets.take(sessionId);
    if (!ticket) return;
    try {
      if (!this.relayPort) throw new FarmError("UNAVAILABLE", "the tracker named no data port");
      // Unread: the tracker's welcome (or refusal) is the worker's to read, and nothing the agent read could be handed on.
      const socket = await connectSocket(this.trackerHost, this.relayPort, this.opts.security, HELLO_TIMEOUT_MS, "the tracker's data port", { unread: true });
      socket.write(framed(encodeLaneHello({ session_id: sessionId, ticket, role: "worker" })));
      const handed = (socket as TLSSocket).encrypted
        ? await this.throughPair(sessionId, "relay", (mine) => pipeSockets(socket, mine, Buffer.alloc(0)))
        : this.hooks.hand(sessionId, socket, Buffer.alloc(0), "relay");
      if (!handed) socket.destroy();
    } catch (err) {
      // The tracker ends the lease when its lane does not open; say why here.
      this.log.warn({ session: sessionId, err: (err as Error).message }, "cannot open the relay lane for a session");
    }
  }

  /**
   * grpc route: the session's ServeSession stream, opened by the agent with
   * the session's ticket alone (as the tracker authorises it: no token),
   * bridged to the worker's socket. The worker reads no welcome and sends
   * none: on this route the tracker expects neither.
   */
  private async serveSession(sessionId: string): Promise<void> {
    const ticket = this.tickets.take(sessionId);
    if (!ticket) return;
    try {
      if (!this.sessions) throw new FarmError("UNAVAILABLE", "the agent is not attached to the tracker");
      const client = this.sessions;
      await this.throughPair(sessionId, "grpc", (mine) => {
        const metadata = new grpc.Metadata();
        metadata.set(SESSION_ID_HEADER, sessionId);
        metadata.set(SESSION_TOKEN_HEADER, ticket);
        const stream = client.ServeSession(metadata) as unknown as ServeStream;
        this.bridged.add(mine);
        mine.once("close", () => this.bridged.delete(mine));
        bridgeStream(
          stream,
          mine,
          (code, broken) => {
            // The tracker ends a session's stream with the session's reason, which it logs and tells the host.
            if (code !== grpc.status.OK) this.log.debug({ session: sessionId, code: grpc.status[code], err: broken?.message }, "a grpc lane's stream ended");
          },
          // The tracker sees only its stream cancelled (a gRPC client sends no status): the pool ends the session
          // with the breach, before the worker can tell its own story of a lane that closed.
          (error) => this.hooks.broke(sessionId, error),
        );
      });
    } catch (err) {
      // The tracker ends the lease when its lane does not open; say why here.
      this.log.warn({ session: sessionId, err: (err as Error).message }, "cannot open the grpc lane for a session");
    }
  }

  /**
   * A lane the agent stays in the middle of: the worker gets one end of a
   * socket pair, `connect` joins the other to where the lane goes once the
   * worker has it. False when no worker serves the session (any more).
   */
  private async throughPair(sessionId: string, kind: Lane, connect: (mine: Socket) => void): Promise<boolean> {
    const [mine, theirs] = await socketPair(this.opts.workRoot);
    if (!this.hooks.hand(sessionId, theirs, Buffer.alloc(0), kind)) {
      mine.destroy();
      theirs.destroy();
      return false;
    }
    connect(mine);
    return true;
  }

  private get trackerHost(): string {
    return parseAddress(this.opts.tracker).host;
  }

  close(): void {
    this.stopWatching();
    this.server?.close();
    for (const s of this.open) s.destroy();
    for (const s of this.bridged) s.destroy();
    this.sessions?.close();
  }
}
