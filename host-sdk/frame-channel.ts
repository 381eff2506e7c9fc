/**
 * How a Session reaches its board: a duplex of encoded frames, and the shell
 * of the host's side of the session lifecycle (docs/architecture.md, "One
 * session lifecycle"). Over the network the session has two parts: its
 * Session stream at the tracker, whose first message is the grant and whose
 * last is the end (it lives as long as the lease), and its lane, which
 * carries the frames — that same stream (grpc route), or a socket to the
 * agent (direct) or through the tracker's data port (relay). LocalSession
 * plugs an in-process board into the same interface.
 *
 * | host side      | meaning                                                         |
 * |----------------|-----------------------------------------------------------------|
 * | `requesting`   | the Session stream waits in the key's queue                     |
 * | `opening`      | granted; the lane is being opened (auto: direct, then relay)    |
 * | `open`         | frames flow                                                     |
 * | `closing`      | the lane closed without the worker's clean end: the tracker's end (why) is awaited (twice its grace, + 1 s) |
 * | `draining`     | the tracker's end came while the lane was open: the frames the worker sent before it ended are read to the lane's close (at most LANE_DRAIN_MS) |
 * | `closed`       | the worker's clean end and the lane's close, or the tracker's end, arrived (or the wait passed): `onClose` ran once |
 *
 * Which event moves it where, and what is done on the way, is decided by a
 * pure machine (host-sdk/channel-machine.ts, whose TSDoc holds the
 * transition table and whose specs cover it); SessionChannel is its shell: it
 * owns the timers, the Session stream and the lane socket, turns what they do
 * into the machine's events and performs the effects that come back.
 */
import type * as grpc from "@grpc/grpc-js";
import { Metadata } from "@grpc/grpc-js";
import {
  CODE_TRAILER,
  FarmError,
  decodeEndFrame,
  decodeGrantFrame,
  encodeLaneHello,
  isEndFrame,
  isGrantFrame,
  type Grant__Output,
  type Lane,
  type Route,
} from "../protos/index.ts";
import {
  HELLO_TIMEOUT_MS,
  LaneReads,
  LaneSocket,
  LongTimer,
  NamedTimers,
  awaitWelcome,
  connectSocket,
  framed,
  parseAddress,
  traceGrant,
  type ClientSecurity,
} from "../runtime/index.ts";
import { status as grpcStatus } from "@grpc/grpc-js";
import {
  begin,
  ending,
  step,
  type ChannelEffect,
  type ChannelEvent,
  type ChannelMachineState,
  type ChannelPhase,
  type DialedLane,
  type TimerName,
} from "./channel-machine.ts";

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
    // A request's deadline may be any uint32 of ms, past what Node's own timer holds.
    const timer =
      timeoutMs === undefined
        ? undefined
        : new LongTimer(timeoutMs, () => {
            cleanup();
            stream.on("error", () => {});
            stream.cancel();
            reject(new FarmError("DEADLINE_EXCEEDED", `the tracker gave no grant nor refusal within ${timeoutMs} ms`));
          });
    const onData = (frame: Buffer) => {
      cleanup();
      stream.pause();
      if (!isGrantFrame(frame)) {
        stream.on("error", () => {});
        stream.cancel();
        reject(new FarmError("PROTOCOL_ERROR", "the tracker's first message on a Session stream was not a grant"));
        return;
      }
      traceGrant("host: grant read");
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
      timer?.clear();
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

export interface LaneOptions {
  /** The tracker's address (HOST:PORT): its data port is on that host. */
  tracker: string;
  security: ClientSecurity;
  /** auto: how long the direct lane may take (connect and welcome) before the relay is tried. */
  directTimeoutMs: number;
}

export interface ChannelOptions extends LaneOptions {
  /** How long to wait for the grant (or the tracker's refusal); undefined: as long as the tracker takes. */
  grantTimeoutMs?: number;
}

/**
 * One session from its request on: `granted` resolves with the grant (or
 * rejects with the request's failure, as awaitGrant does), `opened` with the
 * lane once it is open (auto: direct, falling back to relay; `note` says why
 * it fell back); a lease that ended while its lane was being opened fails
 * `opened` with why, and a lane that failed cancels the Session stream, so
 * that the lease goes back at once rather than at the tracker's open timeout.
 * Then it is the FrameChannel the Session runs on.
 */
export class SessionChannel implements FrameChannel {
  readonly granted: Promise<Grant__Output>;
  readonly opened: Promise<{ lane: Lane; note?: string }>;
  private machine: ChannelMachineState;
  private grant: Grant__Output | undefined;
  private lane: LaneSocket | undefined;
  /** A standby lane used before its welcome: what was sent on it, until the welcome (dialDirect). */
  private unconfirmed: Unconfirmed | undefined;
  private frameHandler: ((frame: Uint8Array) => void) | undefined;
  private closeHandler: ((reason: FarmError | null) => void) | undefined;
  private readonly timers = new NamedTimers<TimerName>();
  private grantSettled!: { resolve(grant: Grant__Output): void; reject(err: FarmError): void };
  private openSettled!: { resolve(opened: { lane: Lane; note?: string }): void; reject(err: FarmError): void };

  constructor(
    private readonly stream: SessionStream,
    private readonly opts: ChannelOptions,
  ) {
    this.granted = new Promise((resolve, reject) => (this.grantSettled = { resolve, reject }));
    this.opened = new Promise((resolve, reject) => (this.openSettled = { resolve, reject }));
    // A request that fails fails both; its caller awaits the grant first and never sees the second.
    this.opened.catch(() => {});
    const { state, effects } = begin({ tracker: opts.tracker, directTimeoutMs: opts.directTimeoutMs });
    this.machine = state;
    this.perform(effects);
    // From the grant until the lane opens the stream is paused: only its breaking is heard (the lease ended).
    stream.on("error", (err) => this.streamEnded(FarmError.from(err)));
    void awaitGrant(stream, opts.grantTimeoutMs).then(
      (grant) =>
        this.feed(
          {
            kind: "granted",
            grant: { route: grant.route as Route, boardId: grant.board?.id ?? "", directAddress: grant.direct_address, endGraceMs: grant.end_grace_ms },
          },
          () => (this.grant = grant),
        ),
      (err: unknown) => this.feed({ kind: "requestFailed", error: FarmError.from(err) }),
    );
  }

  /** Where the lifecycle is (channel-machine.ts). */
  get phase(): ChannelPhase {
    return this.machine.phase;
  }

  send(frame: Uint8Array): boolean {
    return this.sendParts([frame]);
  }

  sendParts(parts: readonly Uint8Array[]): boolean {
    if (this.unconfirmed) return this.unconfirmed.send(parts);
    if (this.lane) return this.lane.sendParts(parts);
    return this.stream.write(parts.length === 1 ? parts[0]! : Buffer.concat(parts));
  }

  drained(): Promise<void> {
    if (this.unconfirmed?.holding) return this.unconfirmed.settled;
    if (this.lane) return this.lane.drained();
    return new Promise((resolve) => this.stream.once("drain", resolve));
  }

  onFrame(handler: (frame: Uint8Array) => void): void {
    this.frameHandler = handler;
  }

  onClose(handler: (reason: FarmError | null) => void): void {
    this.closeHandler = handler;
    const { phase, reason } = this.machine;
    if (phase === "closed" && reason !== undefined) handler(reason);
  }

  end(): void {
    this.feed({ kind: "hostEnd" });
  }

  abort(): void {
    this.feed({ kind: "abort" });
  }

  ending(): { reason: FarmError | null } | undefined {
    return ending(this.machine);
  }

  /** The Session stream's status or error: the end of the lease, saying so when the tracker went away. */
  private streamEnded(error: FarmError | null): void {
    this.feed({ kind: "streamEnded", error, trackerGone: error !== null && connectionFailed(error) });
  }

  /**
   * Steps the machine: a refusal is thrown to the caller, an ignored event
   * changes nothing, an applied one first runs `accepted` (which keeps what
   * the event brought: the grant, the lane), then the effects. The new state
   * is in place before any effect runs, so an event an effect causes (a
   * stream that errors as it is cancelled) meets the state it should.
   */
  private feed(event: ChannelEvent, accepted?: () => void): void {
    const result = step(this.machine, event);
    if (result.outcome === "refused") throw result.error;
    if (result.outcome === "ignored") return;
    accepted?.();
    this.machine = result.state;
    this.perform(result.effects);
  }

  private perform(effects: readonly ChannelEffect[]): void {
    for (const effect of effects) {
      switch (effect.kind) {
        case "startTimer":
          this.timers.start(effect.name, effect.ms, () => this.feed({ kind: "timerFired", name: effect.name }));
          break;
        case "cancelTimer":
          this.timers.cancel(effect.name);
          break;
        case "deliverGrant":
          this.grantSettled.resolve(this.grant!);
          break;
        case "failRequest":
          this.grantSettled.reject(effect.error);
          this.openSettled.reject(effect.error);
          break;
        case "dial":
          void this.dial(effect.lane, effect.timeoutMs);
          break;
        case "readStream":
          this.readStream();
          break;
        case "readLane":
          this.readLane();
          break;
        case "deliverLane":
          this.openSettled.resolve({ lane: effect.lane, ...(effect.note ? { note: effect.note } : {}) });
          break;
        case "failOpen":
          this.openSettled.reject(effect.error);
          break;
        case "cancelStream":
          this.stream.cancel();
          break;
        case "endOutput":
          if (this.lane) this.lane.end();
          else if (!this.stream.writableEnded) this.stream.end();
          break;
        case "closeLane":
          this.lane?.end();
          break;
        case "endStream":
          if (!this.stream.writableEnded) this.stream.end();
          break;
        case "settle":
          this.closeHandler?.(effect.reason);
          break;
      }
    }
  }

  /** Opens one lane; what came of it is the machine's next event. */
  private async dial(kind: DialedLane, timeoutMs: number): Promise<void> {
    const grant = this.grant!;
    let dialed: Awaited<ReturnType<typeof dialDirect>>;
    try {
      dialed =
        kind === "direct"
          ? await dialDirect(grant, this.opts, timeoutMs)
          : {
              lane: await dial(
                grant,
                "relay",
                [parseAddress(this.opts.tracker).host, grant.relay_port],
                "the tracker's data port (relay lane)",
                this.opts,
                timeoutMs,
              ),
            };
    } catch (err) {
      this.feed({ kind: "dialFailed", lane: kind, error: FarmError.from(err) });
      return;
    }
    const { lane, welcome, fallback } = dialed;
    this.feed({ kind: "dialed", lane: kind }, () => {
      this.lane = lane;
      if (welcome && fallback) this.unconfirmed = new Unconfirmed(lane, welcome, fallback);
    });
  }

  /** The Session stream after the grant: the frames (grpc lane) and the tracker's end, then its status. */
  private readStream(): void {
    const { stream } = this;
    stream.on("status", (s: grpc.StatusObject) => this.streamEnded(s.code === grpcStatus.OK ? null : FarmError.from({ ...s, message: s.details })));
    const grpcLane = this.lane === undefined;
    stream.on("data", (frame: Buffer) => {
      if (isEndFrame(frame)) this.feed({ kind: "trackerEnd", reason: endOf(frame) });
      else if (grpcLane) this.frameHandler?.(frame);
    });
    stream.resume();
  }

  /**
   * A socket lane: its frames, the worker's end frame (on a clean close) and
   * its close — after its welcome, where it was used before it (a refusal
   * then moves the session to the agent's port, or closes the lane with why).
   */
  private readLane(): void {
    const unconfirmed = this.unconfirmed;
    if (!unconfirmed) return this.listen(this.lane!);
    const standby = this.lane!;
    void unconfirmed
      .confirm((lane) => {
        // The session may have closed while the agent's port was dialled: then that lane goes too.
        if (this.lane === standby && this.machine.phase === "open") this.lane = lane;
        else lane.end();
      })
      .then(
        (lane) => {
          if (this.lane === lane) this.listen(lane);
        },
        (error: unknown) => this.feed({ kind: "laneClosed", error: FarmError.from(error) }),
      );
  }

  private listen(lane: LaneSocket): void {
    lane.onFrame((frame) => {
      if (isEndFrame(frame)) this.feed({ kind: "workerEnd", reason: endOf(frame) });
      else this.frameHandler?.(frame);
    });
    lane.onClose((error) => this.feed({ kind: "laneClosed", error }));
  }
}

/**
 * The direct lane: at the standby lane of the worker that takes the session,
 * when the grant names one, else (or if that worker has moved on: it is gone,
 * or serves another session) at the agent's data port, which hands it over.
 *
 * The standby lane is used as soon as it is connected, its welcome not
 * awaited (`welcome`): the worker reads the host's first frames right after
 * its hello, so the grant costs one round trip less. If that worker refuses
 * (it moved on), `fallback` opens the agent's port, where the frames sent
 * meanwhile go again (SessionChannel keeps them until the welcome).
 */
async function dialDirect(
  grant: Grant__Output,
  opts: LaneOptions,
  timeoutMs: number,
): Promise<{ lane: LaneSocket; welcome?: Promise<void>; fallback?: () => Promise<LaneSocket> }> {
  const started = Date.now();
  const agent = () =>
    dial(
      grant,
      "direct",
      splitHostPort(grant.direct_address),
      `the agent of board ${grant.board?.id} (direct lane)`,
      opts,
      Math.max(1, timeoutMs - (Date.now() - started)),
    );
  if (!grant.worker_address) return { lane: await agent() };
  const address = splitHostPort(grant.worker_address);
  const what = `the session worker of board ${grant.board?.id} (standby lane)`;
  let lane: LaneSocket;
  try {
    lane = await connectLane(grant, "direct", address, what, opts, timeoutMs);
  } catch (err) {
    if (!movedOn(err)) throw err;
    return { lane: await agent() };
  }
  // Connected, the lane is in use: its welcome gets a handshake's time (the worker may wait up to a second for its
  // assignment), not auto's budget for choosing a lane, which a slow welcome would turn into a lost session.
  return { lane, welcome: welcomeOf(lane, address, what, HELLO_TIMEOUT_MS), fallback: agent };
}

/** A standby lane's worker that is gone (refused connection) or serves another session: the agent's port serves instead. */
function movedOn(err: unknown): boolean {
  const code = FarmError.from(err).code;
  return code === "UNAVAILABLE" || code === "NOT_FOUND";
}

/** Connects one lane, its hello sent with the connection; a refusal or silence within `timeoutMs` is an UNAVAILABLE naming the lane. */
async function dial(
  grant: Grant__Output,
  kind: "direct" | "relay",
  address: [string, number],
  what: string,
  opts: LaneOptions,
  timeoutMs: number,
): Promise<LaneSocket> {
  const started = Date.now();
  const lane = await connectLane(grant, kind, address, what, opts, timeoutMs);
  await welcomeOf(lane, address, what, Math.max(1, timeoutMs - (Date.now() - started)));
  return lane;
}

/** The lane's welcome read, within `timeoutMs`; a refusal (the lane then closed) or silence is the error, naming the lane. */
async function welcomeOf(lane: LaneSocket, [host, port]: [string, number], what: string, timeoutMs: number): Promise<void> {
  try {
    await awaitWelcome(lane, timeoutMs);
    traceGrant("host: welcome read");
  } catch (err) {
    lane.fail(FarmError.from(err));
    throw new FarmError(FarmError.from(err).code, `${what} at ${host}:${port}: ${(err as Error).message}`, { cause: err });
  }
}

/** Connects one lane and sends its hello with the connection; its welcome is the caller's to read. */
async function connectLane(
  grant: Grant__Output,
  kind: "direct" | "relay",
  [host, port]: [string, number],
  what: string,
  opts: LaneOptions,
  timeoutMs: number,
): Promise<LaneSocket> {
  // The direct lane is the agent's certificate, named by its own address; the relay is the tracker's.
  const security: ClientSecurity =
    kind === "direct" ? { ...(grant.lane_tls && opts.security.tls ? { tls: { ...opts.security.tls, serverName: undefined } } : {}) } : opts.security;
  const hello = encodeLaneHello({
    session_id: grant.session_id,
    ticket: grant.ticket,
    role: "host",
    ...(kind === "relay" && opts.security.token ? { token: opts.security.token } : {}),
  });
  // A plaintext lane reads a download's chunks straight into their frames' buffers (LaneReads).
  const reads = security.tls ? undefined : new LaneReads();
  traceGrant("host: lane dialled");
  const socket = await connectSocket(host, port, security, timeoutMs, what, { first: framed(hello), ...(reads ? { onread: reads.onread } : {}) });
  traceGrant("host: lane connected, hello sent");
  return new LaneSocket(socket, `the ${kind} lane of session ${grant.session_id}`, undefined, reads);
}

function splitHostPort(address: string): [string, number] {
  const i = address.lastIndexOf(":");
  return [address.slice(0, i).replace(/^\[(.*)\]$/, "$1"), Number(address.slice(i + 1))];
}

/** The most a session sends on a standby lane before its welcome; more waits for it (SessionChannel.drained). */
export const UNCONFIRMED_MAX_BYTES = 4 << 20;

/**
 * A standby lane in use before its welcome: every frame goes through here.
 * Those sent before the welcome are kept (up to UNCONFIRMED_MAX_BYTES; more
 * are held back, not written) so that, if its worker refuses because it
 * moved on, they go again, in order, on the agent's port; after the welcome
 * (or that fallback) frames go straight to the lane that serves.
 */
class Unconfirmed {
  private readonly kept: (readonly Uint8Array[])[] = [];
  /** How many of `kept` were written on the standby lane; the rest are held back. */
  private written = 0;
  private bytes = 0;
  /** The lane that serves, once known. */
  private serving: LaneSocket | undefined;
  private falling = false;
  private settle!: () => void;
  /** Resolves once the lane that serves is known and what was held back is written on it. */
  readonly settled = new Promise<void>((resolve) => (this.settle = resolve));

  constructor(
    private readonly standby: LaneSocket,
    private readonly welcome: Promise<void>,
    private readonly fallback: () => Promise<LaneSocket>,
  ) {
    // Read by confirm(); not an unhandled rejection before that.
    welcome.catch(() => {});
  }

  /** Frames are held back (the multiplexer awaits `settled` before sending more). */
  get holding(): boolean {
    return !this.serving && (this.falling || this.bytes > UNCONFIRMED_MAX_BYTES);
  }

  /** Sends one frame: on the lane that serves, or kept (written on the standby lane unless held back); false: wait for `settled`. */
  send(parts: readonly Uint8Array[]): boolean {
    if (this.serving) return this.serving.sendParts(parts);
    const hold = this.holding;
    this.kept.push(parts);
    for (const p of parts) this.bytes += p.byteLength;
    if (hold) return false;
    this.written++;
    return this.standby.sendParts(parts) && !this.holding;
  }

  /**
   * The lane that serves: the standby lane once welcomed, or, if its worker
   * moved on, the agent's port's (`replaced` is told at once), with every
   * frame kept sent again on it; rejects with why neither serves.
   */
  async confirm(replaced: (lane: LaneSocket) => void): Promise<LaneSocket> {
    try {
      await this.welcome;
      for (const parts of this.kept.slice(this.written)) this.standby.sendParts(parts);
      return (this.serving = this.standby);
    } catch (err) {
      if (!movedOn(err)) throw err;
      this.falling = true;
      const lane = await this.fallback();
      replaced(lane);
      for (const parts of this.kept) lane.sendParts(parts);
      return (this.serving = lane);
    } finally {
      this.kept.length = 0;
      this.settle();
    }
  }
}
