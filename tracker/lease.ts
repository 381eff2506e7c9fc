/**
 * A lease: one session's exclusive hold on one board, and the tracker's side
 * of the session lifecycle (the table is in docs/architecture.md, "One
 * session lifecycle"; this class is its one owner in the tracker).
 *
 * | state     | meaning                                                                 |
 * |-----------|-------------------------------------------------------------------------|
 * | `granted` | the host holds the grant (on its Session stream); its lane is not open  |
 * | `active`  | the lane is open: both gRPC streams relayed, both sockets joined, or   |
 * |           | the agent said the host reached it directly; on a TVM server's board    |
 * |           | (tracker/tvm/), the server stopped polling: its client connected        |
 * | `ended`   | over; `reason` says why (null: closed cleanly by the host)              |
 *
 * The host's Session stream lives as long as the lease: its first message is
 * the grant, its last the end (BoardFrame.end). Every way a lease ends goes
 * through `end()`, which tells the host, closes the lane, stops timers and
 * hands the board back through `onEnded` (which tells the agent).
 */
import type { ServerDuplexStream } from "@grpc/grpc-js";
import type { Socket } from "node:net";
import { FarmError, encodeEndFrame, encodeGrantFrame, type Lane, type Route } from "../protos/index.ts";
import type { Grant } from "../protos/gen/farm/v1/Grant.ts";
import { Relay } from "./relay.ts";

export type SessionStream = ServerDuplexStream<Buffer, Buffer>;
export type LeaseState = "granted" | "active" | "ended";
/**
 * The lane a session got: one of kernelfarm's (protos/routes.ts), or `tvm`:
 * a TVM client connected to a TVM server itself, on TVM's own protocol
 * (tracker/tvm/), which the tracker never sees.
 */
export type LeaseLane = Lane | "tvm";

export interface LeaseTimeouts {
  openTimeoutMs: number;
  sessionTimeoutMs: number;
  /** The session end grace (protos/routes.ts): how long to wait for the agent to say why a lane closed. */
  endGraceMs: number;
}

/** After a clean end, how long a relay lane's socket may take to finish its last writes and see its peer's end before it is cut. */
export const LANE_LINGER_MS = 2000;

/** One side of a relay lane: the socket after its handshake, and the bytes read past the hello. */
export interface LaneEnd {
  socket: Socket;
  rest: Buffer;
}

/**
 * What a lease needs of its board. tracker/registry.ts's Board is one; it
 * names a lease on one of its boards `BoardLease` (this file does not import
 * the registry, so that the two do not import each other).
 */
export interface LeasedBoard {
  readonly id: string;
  /** What a lease whose lane never opened lacked, in the words of its agent's clients (registry.ts AgentControl). */
  readonly agent: { readonly control: { readonly laneMissing?: string } };
}

export class Lease<B extends LeasedBoard = LeasedBoard> {
  state: LeaseState = "granted";
  reason: FarmError | null = null;
  readonly grantedAt = Date.now();
  /** The lane the session got, once open. */
  lane: LeaseLane | undefined;
  /** The standby lane the grant named (a worker's own port on the agent's direct-lane host); 0: none. */
  lanePort = 0;
  private host: SessionStream | undefined;
  private workerStream: SessionStream | undefined;
  private relay: Relay | undefined;
  private readonly sockets: { host?: LaneEnd; worker?: LaneEnd } = {};
  /** When it ended (ms since the epoch). */
  endedAt = 0;
  private readonly timers = new Set<NodeJS.Timeout>();
  private awaitingReport = false;

  constructor(
    readonly id: string,
    /** The session's ticket: opens its lane, releases it. */
    readonly token: string,
    readonly board: B,
    readonly clientId: string,
    /** The token id granted this session (undefined on a farm without tokens). */
    readonly owner: string | undefined,
    /** What the host asked for; `auto` resolves to direct (relay as fallback) or relay. */
    readonly route: Route,
    readonly timeouts: LeaseTimeouts,
    private readonly onEnded: (lease: Lease<B>) => void,
  ) {
    this.after(timeouts.openTimeoutMs, () => {
      if (this.state === "granted") this.end(new FarmError("CANCELLED", `session ${id} was released: its lane did not open within ${timeouts.openTimeoutMs} ms (${this.missing()})`));
    });
    if (timeouts.sessionTimeoutMs > 0) {
      this.after(timeouts.sessionTimeoutMs, () =>
        this.end(new FarmError("SESSION_TIMEOUT", `session ${id} exceeded its session timeout of ${timeouts.sessionTimeoutMs} ms; request a longer sessionTimeoutMs`)),
      );
    }
  }

  private missing(): string {
    if (this.board.agent.control.laneMissing) return this.board.agent.control.laneMissing;
    if (this.route === "grpc") return this.workerStream ? "the host sent nothing" : "the board's worker did not open its stream";
    if (this.route === "relay" || this.sockets.host || this.sockets.worker) return this.sockets.host ? "the board's worker did not reach the data port" : "the host did not reach the data port";
    return "the host did not reach the board's agent";
  }

  /** The host's Session stream: the grant goes out on it now, the end later. */
  grant(host: SessionStream, grant: Grant): void {
    this.host = host;
    host.write(Buffer.from(encodeGrantFrame(grant)));
    // A stream that breaks (the host process died, its network went) is the host leaving. It also says so after
    // a clean end: no error is made then (one per session, with its stack, at 100 grants/s).
    const left = () => {
      if (this.state !== "ended") this.end(new FarmError("CANCELLED", `the host left session ${this.id}`));
    };
    host.on("cancelled", left);
    host.on("error", left);
    this.maybeStart();
  }

  /** grpc lane: the worker's ServeSession stream. */
  attachWorkerStream(call: SessionStream): void {
    if (this.route !== "grpc") throw new FarmError("PROTOCOL_ERROR", `session ${this.id} travels on the ${this.route} route, not on gRPC streams`);
    if (this.workerStream) throw new FarmError("PROTOCOL_ERROR", `session ${this.id} already has a worker stream`);
    this.workerStream = call;
    const broken = () => this.awaitAgentReport();
    call.on("cancelled", broken);
    call.on("error", broken);
    this.maybeStart();
  }

  /** relay lane: one side's socket, after its hello; the ticket was checked. */
  attachSocket(role: "host" | "worker", end: LaneEnd): void {
    this.checkSocket(role);
    this.sockets[role] = end;
    // Either side's socket closing ends the lane; only the agent knows whether the session ended well.
    end.socket.on("close", () => this.awaitAgentReport());
    end.socket.on("error", () => this.awaitAgentReport());
    this.maybeStart();
  }

  /** Throws unless `role`'s socket may join this session now. */
  checkSocket(role: "host" | "worker"): void {
    if (this.state === "ended") throw new FarmError("NOT_FOUND", `session ${this.id} has ended`);
    if (this.route !== "relay" && this.route !== "auto") throw new FarmError("PROTOCOL_ERROR", `session ${this.id} travels on the ${this.route} route, not through the data port`);
    if (this.lane === "direct") throw new FarmError("PERMISSION_DENIED", `session ${this.id} is open on its direct lane; its ticket is used`);
    if (this.sockets[role]) throw new FarmError("PERMISSION_DENIED", `session ${this.id} already has its ${role} lane; the ticket is used`);
  }

  /** A lane the tracker does not carry opened: the agent says the host reached the worker (direct), or a TVM server stopped polling for its client (tvm). */
  opened(lane: "direct" | "tvm"): void {
    if (this.state !== "granted") return;
    this.lane = lane;
    this.activate();
  }

  private maybeStart(): void {
    if (this.state !== "granted" || !this.host) return;
    if (this.workerStream) {
      this.lane = "grpc";
      this.relay = new Relay(
        this.host,
        this.workerStream,
        () => this.awaitAgentReport(),
        () => this.end(null),
      );
      this.activate();
    } else if (this.sockets.host && this.sockets.worker) {
      const { host, worker } = this.sockets;
      this.lane = "relay";
      // What each side sent right after its hello goes first; then the sockets are joined, bytes undecoded.
      if (host.rest.length) worker.socket.write(host.rest);
      if (worker.rest.length) host.socket.write(worker.rest);
      host.socket.pipe(worker.socket);
      worker.socket.pipe(host.socket);
      this.activate();
    }
  }

  private readonly activeListeners: Array<() => void> = [];

  /** Runs `fn` when the lane opens. */
  whenActive(fn: () => void): void {
    this.activeListeners.push(fn);
  }

  private activate(): void {
    this.state = "active";
    for (const fn of this.activeListeners.splice(0)) fn();
  }

  /**
   * The lane closed, or the worker's stream ended, without an end the tracker
   * saw. Only the board's agent knows why (crash, call timeout, clean close on
   * a lane the tracker does not read), and it reports either way
   * (session_ended); give the report the grace before settling.
   */
  awaitAgentReport(): void {
    if (this.state === "ended" || this.awaitingReport) return;
    this.awaitingReport = true;
    this.after(this.timeouts.endGraceMs, () =>
      this.end(new FarmError("RUNTIME_CRASH", `the session worker of board ${this.board.id} went away and its agent did not say why within ${this.timeouts.endGraceMs} ms`)),
    );
  }

  private readonly endListeners: Array<() => void> = [];

  /** Runs `fn` when the lease ends (at once if it has). */
  whenEnded(fn: () => void): void {
    if (this.state === "ended") fn();
    else this.endListeners.push(fn);
  }

  /** Ends the lease once; `reason` null means a clean close. */
  end(reason: FarmError | null): void {
    if (this.state === "ended") return;
    this.state = "ended";
    this.reason = reason;
    this.endedAt = Date.now();
    for (const fn of this.endListeners.splice(0)) fn();
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.relay?.stop();
    if (this.host) finishHost(this.host, reason);
    if (this.workerStream) finishStream(this.workerStream, reason);
    for (const end of [this.sockets.host, this.sockets.worker]) if (end) closeLaneSocket(end.socket, reason === null);
    this.onEnded(this);
  }

  /** Bytes relayed so far, host → board and board → host (relay and grpc lanes; a direct lane's bytes never reach the tracker). */
  get relayed(): { toBoard: number; fromBoard: number } {
    if (this.relay) return { toBoard: this.relay.stats.hostToBoardBytes, fromBoard: this.relay.stats.boardToHostBytes };
    const { host, worker } = this.sockets;
    return { toBoard: host?.socket.bytesRead ?? 0, fromBoard: worker?.socket.bytesRead ?? 0 };
  }

  private after(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    this.timers.add(t);
  }
}

/** The host's last message is the end, with its reason; then its stream ends (with the reason as its status too). */
function finishHost(call: SessionStream, reason: FarmError | null): void {
  if (call.destroyed || call.writableEnded) return;
  call.write(Buffer.from(encodeEndFrame(reason ? reason.toWire() : null)));
  finishStream(call, reason);
}

function finishStream(call: SessionStream, reason: FarmError | null): void {
  if (call.destroyed || call.writableEnded) return;
  if (reason) call.emit("error", reason.toGrpc());
  else call.end();
}

/**
 * Closes one side of a relay lane. A clean end lets the socket send what it
 * holds, then ends it — but a socket only closes once it also reads its
 * peer's end, and a lane socket may be paused: detached after its hello and
 * never joined (the other side never came), or paused by its pipe waiting
 * for a drain that an ended destination never gives. Such a socket never
 * reads the FIN: the kernel closes the connection and the descriptor stays
 * (issue 27: 12–18 per 40 sessions on TLS relay lanes). So the pipes are
 * cut, the socket is set flowing (what the peer still sends is dropped),
 * and it is destroyed after LANE_LINGER_MS whatever the peer does.
 */
function closeLaneSocket(socket: Socket, clean: boolean): void {
  socket.unpipe();
  if (!clean) {
    socket.destroy();
    return;
  }
  socket.end();
  socket.resume();
  if (!socket.destroyed) {
    const timer = setTimeout(() => socket.destroy(), LANE_LINGER_MS).unref();
    socket.once("close", () => clearTimeout(timer));
  }
}
