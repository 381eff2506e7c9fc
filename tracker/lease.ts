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
 * Which event moves it where, and what is done on the way, is decided by a
 * pure machine (tracker/lease-machine.ts, whose TSDoc holds the transition
 * table and whose specs cover it); this class is its shell: it owns the
 * timers, the host's Session stream, the worker's stream and the relay
 * sockets, turns what they do into the machine's events and performs the
 * effects that come back.
 *
 * The host's Session stream lives as long as the lease: its first message is
 * the grant, its last the end (BoardFrame.end). Every way a lease ends is one
 * list of effects: tell the host, close the lane, stop timers and hand the
 * board back through `onEnded` (which tells the agent).
 */
import type { ServerDuplexStream } from "@grpc/grpc-js";
import type { Socket } from "node:net";
import { encodeEndFrame, encodeGrantFrame, type FarmError, type Grant, type Route } from "../protos/index.ts";
import { NamedTimers } from "../runtime/index.ts";
import {
  begin,
  checkSocket,
  step,
  type LeaseEffect,
  type LeaseEvent,
  type LeaseLane,
  type LeaseMachineState,
  type LeaseState,
  type LeaseTimeouts,
  type SocketRole,
  type TimerName,
} from "./lease-machine.ts";
import { Relay } from "./relay.ts";

export type { LeaseLane, LeaseState, LeaseTimeouts } from "./lease-machine.ts";
export type SessionStream = ServerDuplexStream<Buffer, Buffer>;

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
  readonly agent: { readonly control: { readonly laneMissing?: string; readonly minOpenTimeoutMs?: number } };
}

/** Bytes a lane carried: host → board and board → host (tracker/lane-bytes.ts). */
export interface LaneBytes {
  toBoard: number;
  fromBoard: number;
}

export class Lease<B extends LeasedBoard = LeasedBoard> {
  readonly grantedAt = Date.now();
  readonly timeouts: LeaseTimeouts;
  /** The standby lane the grant named (a worker's own port on the agent's direct-lane host); 0: none. */
  lanePort = 0;
  /** When it ended (ms since the epoch). */
  endedAt = 0;
  /** A direct lane's bytes so far, as its worker reported them through its agent (tracker/lane-bytes.ts): the tracker carries none of them. */
  directBytes: LaneBytes | undefined;
  private machine: LeaseMachineState;
  private host: SessionStream | undefined;
  private grantFrame: Grant | undefined;
  private workerStream: SessionStream | undefined;
  private relay: Relay | undefined;
  private readonly sockets: { host?: LaneEnd; worker?: LaneEnd } = {};
  private readonly timers = new NamedTimers<TimerName>();
  private readonly activeListeners: Array<() => void> = [];
  private readonly endListeners: Array<() => void> = [];

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
    timeouts: LeaseTimeouts,
    private readonly onEnded: (lease: Lease<B>) => void,
  ) {
    const { laneMissing, minOpenTimeoutMs = 0 } = board.agent.control;
    this.timeouts = { ...timeouts, openTimeoutMs: Math.max(timeouts.openTimeoutMs, minOpenTimeoutMs) };
    const { state, effects } = begin({ id, boardId: board.id, laneMissing, route, timeouts: this.timeouts });
    this.machine = state;
    this.perform(effects);
  }

  get state(): LeaseState {
    return this.machine.phase;
  }

  /** Why it ended; null: cleanly, or not yet. */
  get reason(): FarmError | null {
    return this.machine.reason;
  }

  /** The lane the session got, once open. */
  get lane(): LeaseLane | undefined {
    return this.machine.lane;
  }

  /** The host's Session stream: the grant goes out on it now, the end later. */
  grant(host: SessionStream, grant: Grant): void {
    this.feed({ kind: "hostAttached" }, () => {
      this.host = host;
      this.grantFrame = grant;
      // A stream that breaks (the host process died, its network went) is the host leaving. It also says so after
      // a clean end, which the machine ignores: no error is made then (one per session, with its stack, at 100 grants/s).
      const left = () => this.feed({ kind: "hostLeft" });
      host.on("cancelled", left);
      host.on("error", left);
    });
  }

  /** grpc lane: the board's ServeSession stream (its agent's, bridged to the worker). Throws (PROTOCOL_ERROR) off the grpc route or for a second one. */
  attachWorkerStream(call: SessionStream): void {
    this.feed({ kind: "workerStreamAttached" }, () => {
      this.workerStream = call;
      const broken = () => this.feed({ kind: "laneClosed" });
      call.on("cancelled", broken);
      call.on("error", broken);
    });
  }

  /** relay lane: one side's socket, after its hello; the ticket was checked. */
  attachSocket(role: SocketRole, end: LaneEnd): void {
    this.feed({ kind: "socketArrived", role }, () => {
      this.sockets[role] = end;
      // Either side's socket closing ends the lane; only the agent knows whether the session ended well.
      const closed = () => this.feed({ kind: "laneClosed" });
      end.socket.on("close", closed);
      end.socket.on("error", closed);
    });
  }

  /** Throws unless `role`'s socket may join this session now. */
  checkSocket(role: SocketRole): void {
    const refusal = checkSocket(this.machine, role);
    if (refusal) throw refusal;
  }

  /** A lane the tracker does not carry opened: the agent says the host reached the worker (direct), or a TVM server stopped polling for its client (tvm). */
  opened(lane: "direct" | "tvm"): void {
    this.feed({ kind: "laneOpened", lane });
  }

  /** Runs `fn` when the lane opens. */
  whenActive(fn: () => void): void {
    this.activeListeners.push(fn);
  }

  /** Runs `fn` when the lease ends (at once if it has). */
  whenEnded(fn: () => void): void {
    if (this.state === "ended") fn();
    else this.endListeners.push(fn);
  }

  /** Ends the lease once; `reason` null means a clean close. */
  end(reason: FarmError | null): void {
    this.feed({ kind: "end", reason });
  }

  /** Bytes the lane carried so far, host → board and board → host: relayed (relay and grpc lanes), or as reported (direct: `directBytes`). */
  get relayed(): LaneBytes {
    if (this.lane === "direct") return this.directBytes ?? { toBoard: 0, fromBoard: 0 };
    if (this.relay) return { toBoard: this.relay.stats.hostToBoardBytes, fromBoard: this.relay.stats.boardToHostBytes };
    const { host, worker } = this.sockets;
    return { toBoard: host?.socket.bytesRead ?? 0, fromBoard: worker?.socket.bytesRead ?? 0 };
  }

  /**
   * Steps the machine: a refusal is thrown to the caller, an ignored event
   * changes nothing, an applied one first runs `accepted` (which keeps what
   * the event brought: a stream, a socket), then the effects. The new state
   * is in place before any effect runs, so an event an effect causes (a
   * stream that errors as it is ended) meets the state it should.
   */
  private feed(event: LeaseEvent, accepted?: () => void): void {
    const result = step(this.machine, event);
    if (result.outcome === "refused") throw result.error;
    if (result.outcome === "ignored") return;
    accepted?.();
    const ending = result.state.phase === "ended" && this.machine.phase !== "ended";
    this.machine = result.state;
    if (ending) this.endedAt = Date.now();
    this.perform(result.effects);
  }

  private perform(effects: readonly LeaseEffect[]): void {
    for (const effect of effects) {
      switch (effect.kind) {
        case "startTimer":
          this.timers.start(effect.name, effect.ms, () => this.feed({ kind: "timerFired", name: effect.name }));
          break;
        case "cancelTimer":
          this.timers.cancel(effect.name);
          break;
        case "sendGrant":
          if (this.host && this.grantFrame) this.host.write(Buffer.from(encodeGrantFrame(this.grantFrame)));
          break;
        case "startRelay":
          if (this.host && this.workerStream) {
            this.relay = new Relay(
              this.host,
              this.workerStream,
              () => this.feed({ kind: "laneClosed" }),
              () => this.feed({ kind: "workerGoodbye" }),
            );
          }
          break;
        case "joinSockets":
          if (this.sockets.host && this.sockets.worker) joinSockets(this.sockets.host, this.sockets.worker);
          break;
        case "notifyActive":
          for (const fn of this.activeListeners.splice(0)) fn();
          break;
        case "notifyEnded":
          for (const fn of this.endListeners.splice(0)) fn();
          break;
        case "stopRelay":
          this.relay?.stop();
          break;
        case "sendEnd":
          if (this.host) finishHost(this.host, effect.reason);
          break;
        case "finishWorkerStream":
          if (this.workerStream) finishStream(this.workerStream, effect.reason);
          break;
        case "closeSocket": {
          const end = this.sockets[effect.role];
          if (end) closeLaneSocket(end.socket, effect.clean);
          break;
        }
        case "handBack":
          this.onEnded(this);
          break;
      }
    }
  }
}

/** What each side sent right after its hello goes first; then the sockets are joined, bytes undecoded. */
function joinSockets(host: LaneEnd, worker: LaneEnd): void {
  if (host.rest.length) worker.socket.write(host.rest);
  if (worker.rest.length) host.socket.write(worker.rest);
  host.socket.pipe(worker.socket);
  worker.socket.pipe(host.socket);
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
