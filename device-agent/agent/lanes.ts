/**
 * The agent's side of session lanes (runtime/lane.ts, docs/architecture.md
 * "Lanes"): its direct-lane port, where hosts connect with their session's
 * ticket, and its dialling of the tracker's data port for relay lanes. Either
 * way the socket ends up in the session's worker, passed on its channel
 * (SCM_RIGHTS, device-agent/common/handle-passing.ts), so that
 * after the handshake no other process touches the bytes — except with TLS,
 * which the agent terminates (workers hold no key) and pipes to the worker
 * through a unix socket pair.
 *
 * A ticket opens one lane, once (device-agent/common/tickets.ts). A host may also
 * reach the worker without the agent: at the worker's own standby lane
 * (device-agent/worker/standby.ts), which the grant names first.
 *
 * The agent reads no byte past a hello: the welcome comes from the worker
 * (direct lane) or is read by it (relay lane), so the host sends its frames
 * only once the socket is in the worker. (Bytes the agent read and had not
 * handed on would be lost with the hand-over.)
 */
import { randomBytes } from "node:crypto";
import { createServer, connect as netConnect, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { rmSync } from "node:fs";
import type { TLSSocket } from "node:tls";
import { FarmError, encodeLaneHello, type Lane } from "../../protos/index.ts";
import { HELLO_TIMEOUT_MS, connectSocket, framed, socketServer, type ClientSecurity, type Logger, type ServerTls } from "../../runtime/index.ts";
import { Tickets, admitHost } from "../common/tickets.ts";

export interface LaneHooks {
  /** Gives the session's worker its lane; false when no worker serves the session (any more). */
  hand(sessionId: string, socket: Socket, rest: Buffer, kind: "direct" | "relay"): boolean;
  /** The host reached the worker directly (the tracker is told). */
  opened(sessionId: string, lane: Lane): void;
}

export interface AgentLanesOptions {
  /** TLS for the direct lane; without it the lane is plaintext. */
  tls?: ServerTls;
  /** How the agent reaches the tracker (for relay lanes). */
  security: ClientSecurity;
  /** The tracker's host (its data port is on it). */
  trackerHost: string;
  /** Where socket pairs (TLS lanes) are made: the agent's private scratch folder. */
  workRoot: string;
}

export class AgentLanes {
  private readonly tickets = new Tickets();
  private server: Server | undefined;
  private stopWatching = () => {};
  private readonly open = new Set<Socket>();
  /** The tracker's data port, from its Registered message. */
  relayPort = 0;

  constructor(private readonly opts: AgentLanesOptions, private readonly hooks: LaneHooks, private readonly log: Logger) {}

  /** Opens the direct-lane port; returns its port. */
  listen(host: string, port: number): Promise<number> {
    const made = socketServer(this.opts.tls, (socket) => void this.accept(socket));
    this.server = made.server;
    this.stopWatching = made.stopWatching;
    return new Promise((resolve, reject) => {
      made.server.once("error", (err) => reject(new FarmError("UNAVAILABLE", `the agent cannot open its direct-lane port on ${host}:${port}: ${err.message} (--data-port)`, { cause: err })));
      made.server.listen(port, host, () => resolve((made.server.address() as { port: number }).port));
    });
  }

  get secure(): boolean {
    return !!this.opts.tls;
  }

  /** A session was assigned to one of this agent's boards: its ticket will open its lane. */
  expect(sessionId: string, ticket: string, route: string): void {
    this.tickets.expect(sessionId, ticket, route);
    if (route === "relay") void this.dialRelay(sessionId);
  }

  /** The session ended: its ticket opens nothing any more. */
  forget(sessionId: string): void {
    this.tickets.forget(sessionId);
  }

  private async accept(socket: Socket): Promise<void> {
    this.open.add(socket);
    socket.once("close", () => this.open.delete(socket));
    await admitHost(socket, this.tickets, "direct lane", this.log, async (sessionId, lane) => {
      // A TLS socket stays here (piped to the worker through a pair); a plain one goes to the worker.
      const { socket: raw, rest } = lane.detach({ toAnotherProcess: !(socket as TLSSocket).encrypted });
      // Handed on (a plain socket is closed here once sent) or piped (TLS, closed with its pair): not ours to close.
      this.open.delete(socket);
      if (!(await this.handOver(sessionId, raw, rest, "direct"))) throw new FarmError("NOT_FOUND", `session ${sessionId} has no worker any more`);
      this.hooks.opened(sessionId, "direct");
    });
  }

  /** Dials the tracker's data port for a session's worker (relay route, or an auto route's fallback). */
  async dialRelay(sessionId: string): Promise<void> {
    const ticket = this.tickets.take(sessionId);
    if (!ticket) return;
    try {
      if (!this.relayPort) throw new FarmError("UNAVAILABLE", "the tracker named no data port");
      // Unread: the tracker's welcome (or refusal) is the worker's to read, and nothing the agent read could be handed on.
      const socket = await connectSocket(this.opts.trackerHost, this.relayPort, this.opts.security, HELLO_TIMEOUT_MS, "the tracker's data port", { unread: true });
      socket.write(framed(encodeLaneHello({ session_id: sessionId, ticket, role: "worker" })));
      if (!(await this.handOver(sessionId, socket, Buffer.alloc(0), "relay"))) socket.destroy();
    } catch (err) {
      // The tracker ends the lease when its lane does not open; say why here.
      this.log.warn({ session: sessionId, err: (err as Error).message }, "cannot open the relay lane for a session");
    }
  }

  /** The lane's socket to the worker: as it is, or through a pipe when TLS ends here. */
  private async handOver(sessionId: string, socket: Socket, rest: Buffer, kind: "direct" | "relay"): Promise<boolean> {
    if (!(socket as TLSSocket).encrypted) return this.hooks.hand(sessionId, socket, rest, kind);
    const [mine, theirs] = await socketPair(this.opts.workRoot);
    if (!this.hooks.hand(sessionId, theirs, Buffer.alloc(0), kind)) {
      mine.destroy();
      socket.destroy();
      return false;
    }
    if (rest.length) mine.write(rest);
    socket.pipe(mine);
    mine.pipe(socket);
    const drop = () => {
      socket.destroy();
      mine.destroy();
    };
    socket.once("close", drop);
    mine.once("close", drop);
    socket.on("error", drop);
    mine.on("error", drop);
    return true;
  }

  close(): void {
    this.stopWatching();
    this.server?.close();
    for (const s of this.open) s.destroy();
  }
}

/** Two connected unix sockets (Node has no socketpair): through a listener that lives for one connection. */
async function socketPair(dir: string): Promise<[Socket, Socket]> {
  const path = join(dir, `pair-${randomBytes(6).toString("hex")}.sock`);
  // Paused on connect: the accepted end never reads here, so nothing is lost when it is handed to the worker.
  const server = createServer({ pauseOnConnect: true });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(path, resolve);
  });
  try {
    const accepted = new Promise<Socket>((resolve) => server.once("connection", resolve));
    const mine = netConnect(path);
    const theirs = await accepted;
    return [mine, theirs];
  } finally {
    server.close();
    rmSync(path, { force: true });
  }
}
