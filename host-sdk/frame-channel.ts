/**
 * How a Session reaches its board: a duplex of encoded frames, and the host's
 * side of the session lifecycle (docs/architecture.md, "One session
 * lifecycle"). Over the network the session has two parts: its Session stream
 * at the tracker, whose first message is the grant and whose last is the end
 * (it lives as long as the lease), and its lane, which carries the frames —
 * that same stream (grpc route), or a socket to the agent (direct) or through
 * the tracker's data port (relay). LocalSession plugs an in-process board
 * into the same interface.
 *
 * | host side      | meaning                                                         |
 * |----------------|-----------------------------------------------------------------|
 * | `requesting`   | the Session stream waits in the key's queue                     |
 * | `opening`      | granted; the lane is being opened (auto: direct, then relay)    |
 * | `open`         | frames flow                                                     |
 * | `closing`      | the lane closed without the worker's clean end: the tracker's end (why) is awaited (twice its grace, + 1 s) |
 * | `draining`     | the tracker's end came while the lane was open: the frames the worker sent before it ended are read to the lane's close (at most LANE_DRAIN_MS) |
 * | `closed`       | the worker's clean end and the lane's close, or the tracker's end, arrived (or the grace passed): `onClose` ran once |
 */
import type * as grpc from "@grpc/grpc-js";
import { Metadata } from "@grpc/grpc-js";
import {
  CODE_TRAILER, FarmError, SESSION_END_GRACE_MS, decodeEndFrame, decodeGrantFrame, encodeLaneHello, isEndFrame, isGrantFrame, type Grant__Output, type Lane,
} from "../protos/index.ts";
import { LaneSocket, awaitWelcome, connectSocket, framed, parseAddress, type ClientSecurity } from "../runtime/index.ts";
import { status as grpcStatus } from "@grpc/grpc-js";

export interface FrameChannel {
  /** false: the send buffer is full, wait for drained() before sending more. */
  send(frame: Uint8Array): boolean;
  /** One frame given as parts (encodeHostFrameParts): a socket lane writes them as they are. */
  sendParts(parts: readonly Uint8Array[]): boolean;
  drained(): Promise<void>;
  onFrame(handler: (frame: Uint8Array) => void): void;
  /** Called once when the channel is over; null means a clean end. */
  onClose(handler: (reason: FarmError | null) => void): void;
  /** No more frames from this side. */
  end(): void;
  /** Drops the channel now. */
  abort(): void;
  /** The tracker's end, once it came while the lane still drains: no new request may go out (`draining`). */
  ending?(): { reason: FarmError | null } | undefined;
}

export type SessionStream = grpc.ClientDuplexStream<Uint8Array, Buffer>;

/** The end a frame or a status carries: null clean. */
function endOf(frame: Uint8Array): FarmError | null {
  const reason = decodeEndFrame(frame);
  return reason ? FarmError.fromWire(reason) : null;
}

/**
 * Waits for the grant on a Session stream: its first message. The request's
 * refusal or deadline arrives as the stream's status instead.
 */
export function awaitGrant(stream: SessionStream, timeoutMs?: number): Promise<Grant__Output> {
  return new Promise((resolve, reject) => {
    const timer = timeoutMs === undefined ? undefined : setTimeout(() => {
      cleanup();
      stream.on("error", () => {});
      stream.cancel();
      reject(new FarmError("DEADLINE_EXCEEDED", `the tracker gave no grant nor refusal within ${timeoutMs} ms`));
    }, timeoutMs);
    const onData = (frame: Buffer) => {
      cleanup();
      stream.pause();
      if (!isGrantFrame(frame)) {
        stream.on("error", () => {});
        stream.cancel();
        reject(new FarmError("PROTOCOL_ERROR", "the tracker's first message on a Session stream was not a grant"));
        return;
      }
      resolve(decodeGrantFrame(frame));
    };
    const onError = (err: unknown) => {
      cleanup();
      reject(FarmError.from(err));
    };
    const onStatus = (s: grpc.StatusObject) => {
      if (s.code === grpcStatus.OK) onError(new FarmError("PROTOCOL_ERROR", "the tracker ended a Session stream without a grant"));
    };
    const cleanup = () => {
      clearTimeout(timer);
      stream.off("data", onData);
      stream.off("error", onError);
      stream.off("status", onStatus);
    };
    stream.on("data", onData);
    stream.on("error", onError);
    stream.on("status", onStatus);
  });
}

/**
 * Whether `err` is an UNAVAILABLE status that grpc-js made up, with no farm
 * code — no connection to the tracker, or one that broke under the call (it
 * died or restarted) — rather than the tracker's own answer: its refusals and
 * ends always carry a farm code (protos/errors.ts).
 */
export function connectionFailed(err: FarmError): boolean {
  const status = err.cause as { metadata?: unknown } | undefined;
  return err.code === "UNAVAILABLE" && status?.metadata instanceof Metadata && status.metadata.get(CODE_TRAILER).length === 0;
}

/** What both channels share: the tracker's Session stream, whose end is the session's end. */
abstract class SessionChannelBase implements FrameChannel {
  protected frameHandler: ((frame: Uint8Array) => void) | undefined;
  private closeHandler: ((reason: FarmError | null) => void) | undefined;
  private closedWith: { reason: FarmError | null } | undefined;

  constructor(protected readonly stream: SessionStream, private readonly tracker: string) {
    stream.on("status", (s: grpc.StatusObject) => this.streamEnded(s.code === grpcStatus.OK ? null : this.broken(FarmError.from({ ...s, message: s.details }))));
    stream.on("error", (err) => this.streamEnded(this.broken(FarmError.from(err))));
  }

  /** The Session stream ended (its status follows the tracker's end frame, or the tracker went away). */
  protected streamEnded(reason: FarmError | null): void {
    this.close(reason);
  }

  /** The Session stream's end, saying so when the tracker went away: the session cannot outlive its lease, which lived there. */
  private broken(err: FarmError): FarmError {
    if (!connectionFailed(err)) return err;
    return new FarmError(
      "UNAVAILABLE",
      `the tracker at ${this.tracker} went away (${err.message}) and its lease on this board with it: the board's agent ends the session too. Request a new session; a restarted tracker takes requests as soon as it listens`,
      { cause: err },
    );
  }

  protected close(reason: FarmError | null): void {
    if (this.closedWith) return;
    this.closedWith = { reason };
    this.closed();
    this.closeHandler?.(reason);
  }

  /** Frees what the lane holds once the session is over. */
  protected abstract closed(): void;

  abstract send(frame: Uint8Array): boolean;

  sendParts(parts: readonly Uint8Array[]): boolean {
    return this.send(parts.length === 1 ? parts[0]! : Buffer.concat(parts));
  }
  abstract drained(): Promise<void>;
  abstract end(): void;

  onFrame(handler: (frame: Uint8Array) => void): void {
    this.frameHandler = handler;
  }

  onClose(handler: (reason: FarmError | null) => void): void {
    this.closeHandler = handler;
    if (this.closedWith) handler(this.closedWith.reason);
  }

  abort(): void {
    this.stream.cancel();
    this.close(new FarmError("CANCELLED", "the session was dropped by this host"));
  }
}

/** The grpc lane: frames ride the Session stream itself, after the grant. */
export class StreamChannel extends SessionChannelBase {
  constructor(stream: SessionStream, tracker: string) {
    super(stream, tracker);
    stream.on("data", (frame: Buffer) => {
      if (isEndFrame(frame)) this.close(endOf(frame));
      else this.frameHandler?.(frame);
    });
    stream.resume();
  }

  send(frame: Uint8Array): boolean {
    return this.stream.write(frame);
  }

  drained(): Promise<void> {
    return new Promise((resolve) => this.stream.once("drain", resolve));
  }

  end(): void {
    if (!this.stream.writableEnded) this.stream.end();
  }

  protected closed(): void {}
}

/** How long the lane is read after the tracker's end came, for frames the worker sent before it ended. */
export const LANE_DRAIN_MS = 1000;

/**
 * A socket lane (direct or relay). The lane carries the frames and, on a
 * clean close, the worker's end frame; the Session stream carries the
 * tracker's end, which says the lease is over (and why, when the lane just
 * broke). A lane that closes first waits the grace for it.
 */
export class LaneChannel extends SessionChannelBase {
  private laneEnd: FarmError | null | undefined;
  /** The tracker's end, while the lane is drained. */
  private trackerEnd: FarmError | null | undefined;
  private grace: NodeJS.Timeout | undefined;

  constructor(stream: SessionStream, tracker: string, private readonly lane: LaneSocket, readonly kind: Lane, private readonly graceMs: number) {
    super(stream, tracker);
    stream.on("data", (frame: Buffer) => {
      if (!isEndFrame(frame)) return;
      const end = endOf(frame);
      if (lane.isClosed) return this.close(end);
      // The lane and the Session stream are two connections: the end of a worker that crashed can overtake the
      // answer it sent just before, which this host has not read yet. That answer belongs to its request, not to
      // the crash: read the lane to its close (the worker is gone, or its agent ends it) before ending.
      this.trackerEnd = end;
      this.grace = setTimeout(() => this.close(end), LANE_DRAIN_MS);
    });
    stream.resume();
    lane.onFrame((frame) => {
      if (isEndFrame(frame)) this.laneEnd = endOf(frame);
      else this.frameHandler?.(frame);
    });
    lane.onClose((err) => {
      // The worker ended the lane with its clean end: the session is over, and the host knows how. The tracker's
      // end (which follows the agent's report) would add only a round trip to the host's next request.
      if (this.laneEnd === null) return this.close(null);
      if (this.trackerEnd !== undefined) return this.close(this.trackerEnd);
      this.grace = setTimeout(() => {
        // A reachable tracker settles every end within its grace (a silent agent is its RUNTIME_CRASH): silence past
        // twice that means this host cannot hear the tracker, which is no fault of the kernel (measure() retries it).
        const lost = err ?? new FarmError("UNAVAILABLE", `the session's ${kind} lane closed and the tracker did not say why within ${graceMs} ms: it may be unreachable from this host (a network partition?)`);
        this.close(this.laneEnd !== undefined ? this.laneEnd : lost);
      }, this.graceMs);
    });
  }

  send(frame: Uint8Array): boolean {
    return this.lane.send(frame);
  }

  override sendParts(parts: readonly Uint8Array[]): boolean {
    return this.lane.sendParts(parts);
  }

  drained(): Promise<void> {
    return this.lane.drained();
  }

  end(): void {
    this.lane.end();
  }

  ending(): { reason: FarmError | null } | undefined {
    return this.trackerEnd === undefined ? undefined : { reason: this.trackerEnd };
  }

  /** While the lane drains, the status that follows the tracker's end changes nothing: the end said why. */
  protected override streamEnded(reason: FarmError | null): void {
    if (this.trackerEnd === undefined) this.close(reason);
  }

  protected closed(): void {
    clearTimeout(this.grace);
    if (!this.lane.isClosed) this.lane.end();
    // The lease is over: nothing more comes on the stream.
    if (!this.stream.writableEnded) this.stream.end();
  }
}

export interface LaneOptions {
  /** The tracker's address (HOST:PORT): its data port is on that host. */
  tracker: string;
  security: ClientSecurity;
  /** auto: how long the direct lane may take (connect and welcome) before the relay is tried. */
  directTimeoutMs: number;
}

/** Opens the lane a grant offers, falling back from direct to relay on the auto route; `note` says why it fell back. */
export async function openLane(grant: Grant__Output, stream: SessionStream, opts: LaneOptions): Promise<{ channel: FrameChannel; lane: Lane; note?: string }> {
  // The tracker settles a lane's end within its grace (the agent's report, or "did not say why"), and the end
  // then travels to here: wait for that, twice over, before deciding without it (a tracker that is gone).
  const graceMs = 2 * (grant.end_grace_ms || SESSION_END_GRACE_MS) + 1000;
  if (grant.route === "grpc") return { channel: new StreamChannel(stream, opts.tracker), lane: "grpc" };
  let note: string | undefined;
  if (grant.route === "direct" || grant.route === "auto") {
    try {
      if (!grant.direct_address) throw new FarmError("UNAVAILABLE", `board ${grant.board?.id}'s agent serves no direct lane (started with --no-direct, or with TLS to its tracker and no --data-tls-cert)`);
      const lane = await dialDirect(grant, opts, grant.route === "auto" ? opts.directTimeoutMs : 10_000);
      return { channel: new LaneChannel(stream, opts.tracker, lane, "direct", graceMs), lane: "direct" };
    } catch (err) {
      if (grant.route === "direct") throw err;
      note = `the direct lane to ${grant.direct_address} failed (${(err as Error).message}); fell back to the tracker's relay`;
    }
  }
  const lane = await dial(grant, "relay", [parseAddress(opts.tracker).host, grant.relay_port], "the tracker's data port (relay lane)", opts, 10_000);
  return { channel: new LaneChannel(stream, opts.tracker, lane, "relay", graceMs), lane: "relay", ...(note ? { note } : {}) };
}

/**
 * The direct lane: at the standby lane of the worker that takes the session,
 * when the grant names one, else (or if that worker has moved on: it is gone,
 * or serves another session) at the agent's data port, which hands it over.
 */
async function dialDirect(grant: Grant__Output, opts: LaneOptions, timeoutMs: number): Promise<LaneSocket> {
  const started = Date.now();
  const agent = () => dial(grant, "direct", splitHostPort(grant.direct_address), `the agent of board ${grant.board?.id} (direct lane)`, opts, Math.max(1, timeoutMs - (Date.now() - started)));
  if (!grant.worker_address) return agent();
  try {
    return await dial(grant, "direct", splitHostPort(grant.worker_address), `the session worker of board ${grant.board?.id} (standby lane)`, opts, timeoutMs);
  } catch (err) {
    const code = FarmError.from(err).code;
    if (code !== "UNAVAILABLE" && code !== "NOT_FOUND") throw err;
    return agent();
  }
}

/** Connects one lane, its hello sent with the connection; a refusal or silence within `timeoutMs` is an UNAVAILABLE naming the lane. */
async function dial(grant: Grant__Output, kind: "direct" | "relay", [host, port]: [string, number], what: string, opts: LaneOptions, timeoutMs: number): Promise<LaneSocket> {
  const started = Date.now();
  // The direct lane is the agent's certificate, named by its own address; the relay is the tracker's.
  const security: ClientSecurity = kind === "direct"
    ? { ...(grant.lane_tls && opts.security.tls ? { tls: { ...opts.security.tls, serverName: undefined } } : {}) }
    : opts.security;
  const hello = encodeLaneHello({ session_id: grant.session_id, ticket: grant.ticket, role: "host", ...(kind === "relay" && opts.security.token ? { token: opts.security.token } : {}) });
  const socket = await connectSocket(host, port, security, timeoutMs, what, { first: framed(hello) });
  const lane = new LaneSocket(socket, `the ${kind} lane of session ${grant.session_id}`);
  try {
    await awaitWelcome(lane, Math.max(1, timeoutMs - (Date.now() - started)));
  } catch (err) {
    lane.fail(FarmError.from(err));
    throw new FarmError(FarmError.from(err).code, `${what} at ${host}:${port}: ${(err as Error).message}`, { cause: err });
  }
  return lane;
}

function splitHostPort(address: string): [string, number] {
  const i = address.lastIndexOf(":");
  return [address.slice(0, i).replace(/^\[(.*)\]$/, "$1"), Number(address.slice(i + 1))];
}
