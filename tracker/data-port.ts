/**
 * The tracker's data port: relay lanes. A host and its session's worker (its
 * agent dials for it) each connect, say hello with the session's ticket, and
 * are joined; from then on the tracker pipes bytes between the two sockets
 * and never decodes a frame. For agents behind NAT: both sides dial out.
 *
 * The host proves who it is as on the gRPC port (its token, in the hello) and
 * must be the one the session was granted to; the worker side shows the
 * ticket alone (workers hold no secret).
 */
import type { Server, Socket } from "node:net";
import { FarmError } from "../protos/index.ts";
import { LaneSocket, acceptHello, type AcceptedHello, checkTokenShape, refuse, socketServer, welcome, type Logger, type ServerTls } from "../runtime/index.ts";
import type { Caller } from "./auth.ts";
import type { BoardLease } from "./registry.ts";

export interface DataPortHooks {
  /** The live lease the hello names, its ticket checked (and, for the host, who it was granted to); throws a FarmError otherwise. */
  lease(hello: AcceptedHello, caller: Caller): BoardLease;
  /** Who a host is by the token in its hello. */
  caller(token: string | undefined, peer: string): Caller;
  /** An auto-routed host fell back to the relay: its agent must dial in for the worker. */
  fallback(lease: BoardLease): void;
}

export class DataPort {
  private readonly server: Server;
  private readonly stopWatching: () => void;
  private readonly open = new Set<Socket>();

  constructor(
    tls: ServerTls | undefined,
    private readonly hooks: DataPortHooks,
    private readonly log: Logger,
  ) {
    // accept() answers its own failures (a refusal on the lane, a log line): nothing to handle here.
    const made = socketServer(tls, (socket) => void this.accept(socket));
    this.server = made.server;
    this.stopWatching = made.stopWatching;
  }

  /** Its port once listening, else 0; read on every grant (the relay port it names), so kept, not asked of the socket (a getsockname). */
  get port(): number {
    return this.boundPort;
  }
  private boundPort = 0;

  listen(host: string, port: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once("error", (err) =>
        reject(new FarmError("UNAVAILABLE", `the tracker cannot open its data port on ${host}:${port}: ${err.message}`, { cause: err })),
      );
      this.server.listen(port, host, () => {
        const a = this.server.address();
        this.boundPort = typeof a === "object" && a ? a.port : 0;
        resolve();
      });
    });
  }

  private async accept(socket: Socket): Promise<void> {
    this.open.add(socket);
    socket.once("close", () => this.open.delete(socket));
    const peer = `${socket.remoteAddress}:${socket.remotePort}`;
    const lane = new LaneSocket(socket, `the lane from ${peer}`);
    let hello: AcceptedHello;
    try {
      hello = await acceptHello(lane);
    } catch (err) {
      // Garbage or silence before a hello: refused (acceptHello answered), logged, nothing else touched.
      this.log.info({ peer, err: (err as Error).message }, "data port: a connection without a lane hello");
      lane.socket.destroy();
      return;
    }
    try {
      const caller = hello.role === "host" ? this.hooks.caller(hello.token || undefined, peer) : ({ name: "worker", kind: "anonymous", peer } as Caller);
      if (hello.role === "host" && hello.token) checkTokenShape(hello.token);
      const lease = this.hooks.lease(hello, caller);
      lease.checkSocket(hello.role);
      // Welcomed before the join: the other side's bytes may follow at once.
      welcome(lane);
      lease.attachSocket(hello.role, lane.detach());
      if (hello.role === "host" && lease.route === "auto" && lease.state === "granted") this.hooks.fallback(lease);
    } catch (err) {
      const e = FarmError.from(err);
      this.log.info({ peer, session: hello.session_id, role: hello.role, code: e.code }, `data port: ${e.message}`);
      refuse(lane, e);
    }
  }

  close(): void {
    this.stopWatching();
    this.server.close();
    this.boundPort = 0;
    for (const s of this.open) s.destroy();
  }
}
