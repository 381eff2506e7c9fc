/**
 * A lane: the session protocol's frames over a byte stream (a TCP or TLS
 * socket, or a unix socket handed to a session worker). Each frame is a
 * 4-byte big-endian length and the encoded frame. The connecting side's
 * first frame is a LaneHello; the accepting side answers one LaneWelcome.
 *
 * `LaneSocket` is the one implementation of the framing, used by the host
 * SDK, the tracker's data port (for the handshake only: after it, bytes are
 * piped undecoded), the agent's data port and the session worker.
 */
import type { Socket } from "node:net";
import { FarmError } from "../protos/errors.ts";
import { decodeLaneHello, decodeLaneWelcome, encodeLaneWelcome } from "../protos/frames.ts";
import { MAX_MESSAGE_BYTES } from "../protos/grpc.ts";
import { HELLO_TIMEOUT_MS } from "../protos/gen/contract.ts";
import type { LaneHello__Output } from "../protos/frames.ts";
import type { LaneRoleName } from "../protos/enums.ts";

const HEADER_BYTES = 4;
/** Frames up to this size are copied behind their header into one write; larger ones go as two (corked). */
const COPY_LIMIT = 64 << 10;
const EMPTY = Buffer.alloc(0);
/** Where a socket reads into its own buffers (LaneReads): between frames, this much at a time, as net itself reads. */
const READ_BYTES = 64 << 10;
/** How long an accepted connection may take to say who it is (declared for both SDKs in contract.json). */
export { HELLO_TIMEOUT_MS };
/** A hello is a session id, a ticket, a role and at most a token: anything larger is not one. */
const MAX_HELLO_BYTES = 4096;

/** One frame as it travels: its length, then its bytes. */
export function framed(frame: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(HEADER_BYTES + frame.byteLength);
  out.writeUInt32BE(frame.byteLength, 0);
  out.set(frame, HEADER_BYTES);
  return out;
}

/**
 * A socket's reads for a LaneSocket, into buffers it chooses (net's
 * `onread`, given to the socket when it is made: connectSocket's `onread`).
 * Once a large frame's header has come, the rest of that frame is read by
 * the kernel straight into the buffer the frame is delivered in, in reads as
 * large as what remains of it: no 64 KiB pieces joined, nor allocated. The
 * frame's length is checked against the lane's limit before its buffer is
 * made. Bytes read before the LaneSocket takes over wait here.
 */
export class LaneReads {
  private lane: LaneSocket | undefined;
  private readonly early: Buffer[] = [];
  /** A frame being read into its own buffer (header included): `got` bytes of it are in. */
  private into: { frame: Buffer; got: number } | undefined;
  /** What net's `onread` takes. */
  readonly onread = {
    buffer: (): Uint8Array => (this.into ? this.into.frame.subarray(this.into.got) : Buffer.allocUnsafe(READ_BYTES)),
    // true: go on reading (a lane that must not read pauses its socket).
    callback: (n: number, buf: Uint8Array): boolean => {
      this.read(n, buf);
      return true;
    },
  };

  private read(n: number, buf: Uint8Array): void {
    let chunk = Buffer.from(buf.buffer, buf.byteOffset, n);
    const into = this.into;
    if (into) {
      const { frame } = into;
      const inPlace = buf.buffer === frame.buffer && buf.byteOffset === frame.byteOffset + into.got;
      // A buffer handed out before the frame's began (the lane took a frame's start outside a read): copied in.
      const used = inPlace ? n : chunk.copy(frame, into.got);
      into.got += used;
      if (into.got < frame.length) return;
      this.into = undefined;
      this.lane!.received(frame);
      if (used === n) return;
      chunk = chunk.subarray(used);
    }
    if (this.lane) this.lane.received(chunk);
    else this.early.push(chunk);
  }

  /** @internal The LaneSocket reading through this: it gets what came before it. */
  attach(lane: LaneSocket): void {
    this.lane = lane;
    for (const c of this.early.splice(0)) lane.received(c);
  }

  /** @internal Reads the rest of a frame of `length` bytes (header included) into one buffer that starts with `have`. */
  readFrameInto(have: readonly Buffer[], length: number): void {
    const frame = Buffer.allocUnsafe(length);
    let got = 0;
    for (const c of have) got += c.copy(frame, got);
    this.into = { frame, got };
  }
}

export class LaneSocket {
  private readonly chunks: Buffer[] = [];
  private buffered = 0;
  private frameHandler: ((frame: Buffer) => void) | undefined;
  private readonly closeHandlers = new Set<(err: FarmError | null) => void>();
  private closed: { err: FarmError | null } | undefined;
  /** The largest frame accepted now; the handshake's is small. */
  private limit: number;

  /**
   * `maxFrameBytes`: the largest frame accepted after the handshake; a larger one fails the lane (PROTOCOL_ERROR).
   * `reads`: the socket was made to read through them (its `onread`: connectSocket's), not by 'data' events.
   */
  constructor(
    readonly socket: Socket,
    private readonly what: string,
    private readonly maxFrameBytes = MAX_MESSAGE_BYTES,
    private readonly reads?: LaneReads,
  ) {
    this.limit = maxFrameBytes;
    socket.setNoDelay(true);
    if (reads) reads.attach(this);
    else socket.on("data", this.onData);
    socket.on("error", this.onError);
    socket.on("close", this.onSocketClose);
    socket.on("end", this.onEnd);
  }

  private readonly onError = (err: Error): void => this.close(new FarmError("UNAVAILABLE", `${this.what}: ${err.message}`, { cause: err }));
  private readonly onSocketClose = (): void => this.close(null);
  private readonly onEnd = (): void => {
    // The other side is done sending; so are we.
    if (!this.socket.writableEnded) this.socket.end();
  };

  /** @internal Bytes its LaneReads read: a piece, or a whole frame read into its own buffer. */
  received(chunk: Buffer): void {
    this.onData(chunk);
  }

  private readonly onData = (chunk: Buffer): void => {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    while (this.frameHandler && this.buffered >= HEADER_BYTES) {
      const length = this.peekLength();
      if (length > this.limit) {
        this.fail(new FarmError("PROTOCOL_ERROR", `${this.what}: a frame of ${length} bytes is over the limit of ${this.limit}`));
        return;
      }
      if (this.buffered < HEADER_BYTES + length) {
        if (this.reads && length > READ_BYTES) {
          // The rest of it is read straight into its own buffer, which comes back here whole.
          this.reads.readFrameInto(this.chunks, HEADER_BYTES + length);
          this.chunks.length = 0;
          this.buffered = 0;
        }
        return;
      }
      const frame = this.take(HEADER_BYTES + length).subarray(HEADER_BYTES);
      this.frameHandler(frame);
    }
  };

  private peekLength(): number {
    const first = this.chunks[0]!;
    if (first.length >= HEADER_BYTES) return first.readUInt32BE(0);
    return Buffer.concat(this.chunks, HEADER_BYTES).readUInt32BE(0);
  }

  /** The next `n` buffered bytes, copied only when they span chunks. */
  private take(n: number): Buffer {
    this.buffered -= n;
    const first = this.chunks[0]!;
    if (first.length === n) return this.chunks.shift()!;
    if (first.length > n) {
      this.chunks[0] = first.subarray(n);
      return first.subarray(0, n);
    }
    const out = Buffer.allocUnsafe(n);
    let at = 0;
    while (at < n) {
      const c = this.chunks[0]!;
      const used = Math.min(c.length, n - at);
      c.copy(out, at, 0, used);
      at += used;
      if (used === c.length) this.chunks.shift();
      else this.chunks[0] = c.subarray(used);
    }
    return out;
  }

  /** Sends one frame; false: the socket's buffer is full, wait for drained(). */
  send(frame: Uint8Array): boolean {
    return this.sendParts([frame]);
  }

  /**
   * Sends one frame given as parts (protos/frames.ts encodeHostFrameParts):
   * a small frame as one copied buffer, a large one as its header and its
   * parts, written together (corked) without joining them.
   */
  sendParts(parts: readonly Uint8Array[]): boolean {
    let length = 0;
    for (const p of parts) length += p.byteLength;
    if (length <= COPY_LIMIT) return this.socket.write(framed(parts.length === 1 ? parts[0]! : Buffer.concat(parts)));
    const header = Buffer.allocUnsafe(HEADER_BYTES);
    header.writeUInt32BE(length, 0);
    this.socket.cork();
    this.socket.write(header);
    let ok = true;
    for (const p of parts) ok = this.socket.write(p);
    this.socket.uncork();
    return ok;
  }

  /**
   * Resolves once every frame sent so far has left this process (the kernel
   * has it, so a crash of this process no longer loses it); undefined when it
   * already has — a write to a socket with room in it is synchronous.
   */
  flushed(): Promise<void> | undefined {
    if (this.closed || this.socket.writableLength === 0) return undefined;
    // Writes complete in order: an empty one completes after all before it (or fails once the socket is gone).
    return new Promise((resolve) => this.socket.write(EMPTY, () => resolve()));
  }

  drained(): Promise<void> {
    return new Promise((resolve) => {
      if (this.closed || !this.socket.writableNeedDrain) return resolve();
      const done = () => {
        this.socket.off("drain", done);
        this.socket.off("close", done);
        resolve();
      };
      this.socket.once("drain", done);
      this.socket.once("close", done);
    });
  }

  onFrame(handler: (frame: Buffer) => void): void {
    this.frameHandler = handler;
    // Frames that arrived before anyone listened.
    if (this.buffered > 0) this.onData(Buffer.alloc(0));
  }

  /** Once: null when the other side closed, or the error. Returns a function that removes the handler. */
  onClose(handler: (err: FarmError | null) => void): () => void {
    if (this.closed) handler(this.closed.err);
    else this.closeHandlers.add(handler);
    return () => this.closeHandlers.delete(handler);
  }

  private close(err: FarmError | null): void {
    if (this.closed) return;
    this.closed = { err };
    for (const h of [...this.closeHandlers]) h(err);
    this.closeHandlers.clear();
  }

  get isClosed(): boolean {
    return this.closed !== undefined;
  }

  /** No more frames from this side (the other side's are still read). */
  end(): void {
    if (!this.socket.writableEnded) this.socket.end();
  }

  /** Drops the connection now, telling our side's handler why. */
  fail(err: FarmError): void {
    this.close(err);
    this.socket.destroy();
  }

  /**
   * The first frame, a handshake message: read with a small size limit and a
   * timeout, so that garbage or silence before it costs nothing.
   */
  first(what: string, timeoutMs = HELLO_TIMEOUT_MS): Promise<Buffer> {
    this.limit = MAX_HELLO_BYTES;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.fail(new FarmError("TIMEOUT", `${this.what}: no ${what} within ${timeoutMs} ms`));
      }, timeoutMs);
      const stopWatching = this.onClose((err) => {
        clearTimeout(timer);
        reject(err ?? new FarmError("UNAVAILABLE", `${this.what}: closed before its ${what}`));
      });
      this.onFrame((frame) => {
        clearTimeout(timer);
        this.frameHandler = undefined;
        stopWatching();
        this.limit = this.maxFrameBytes;
        resolve(frame);
      });
    });
  }

  /**
   * Stops reading and hands back the socket with the bytes read past the
   * last frame, for someone else to carry on from: this process (the
   * tracker's relay pipes it on), or, with `toAnotherProcess`, a session
   * worker the socket is sent to. Not for a lane that reads through
   * LaneReads (the host's own lanes, never handed on).
   */
  detach(opts: { toAnotherProcess?: boolean } = {}): { socket: Socket; rest: Buffer } {
    this.socket.pause();
    if (opts.toAnotherProcess) {
      // pause() only stops 'data' events: the handle goes on reading into the stream's buffer, and once the
      // handle is sent to another process (child_process.send) what it still reads here is dropped, racing
      // that process for the same socket. Stop the handle itself (Node has no public call for it). Not for a
      // socket this process reads again: its stream would wait for a read it stopped.
      const handle = (this.socket as unknown as { _handle?: { readStop?: () => number; reading?: boolean } })._handle;
      if (handle?.readStop) {
        handle.readStop();
        handle.reading = false;
      }
    }
    // Only this lane's own listeners: whoever else watches the socket (a server's set of open sockets) stays.
    this.socket.off("data", this.onData);
    this.socket.off("error", this.onError);
    this.socket.off("close", this.onSocketClose);
    this.socket.off("end", this.onEnd);
    // A paused stream may hold chunks it read but did not emit yet.
    for (let c = this.socket.read() as Buffer | null; c !== null; c = this.socket.read() as Buffer | null) {
      this.chunks.push(c);
      this.buffered += c.length;
    }
    const rest = Buffer.concat(this.chunks, this.buffered);
    this.chunks.length = 0;
    this.buffered = 0;
    return { socket: this.socket, rest };
  }

  /** Bytes already read, to be handled as if just received (after a hand-over). */
  unshift(rest: Buffer): void {
    if (rest.length === 0) return;
    this.onData(rest);
  }
}

/** A hello the accepting side took: it names a session, a ticket and a role. */
export type AcceptedHello = LaneHello__Output & { role: LaneRoleName };

/** The accepting side: the peer's hello, or an error already answered to the peer (the lane is then closed). */
export async function acceptHello(lane: LaneSocket): Promise<AcceptedHello> {
  const bytes = await lane.first("hello");
  try {
    // A role the enum lacks is refused by the decoder; none ("") here, with the rest of what a hello needs.
    const hello = decodeLaneHello(bytes);
    if (!hello.session_id || !hello.ticket || hello.role === "") {
      throw new Error("it needs a session id, a ticket and a role (host or worker)");
    }
    return { ...hello, role: hello.role };
  } catch (err) {
    const e = new FarmError("PROTOCOL_ERROR", `${lane.socket.remoteAddress ?? "a peer"} did not open with a lane hello: ${(err as Error).message}`);
    refuse(lane, e);
    throw e;
  }
}

/** Answers a hello: the lane is open. */
export function welcome(lane: LaneSocket): void {
  lane.send(encodeLaneWelcome({}));
}

/** Answers a hello with why not, and closes the lane. */
export function refuse(lane: LaneSocket, err: FarmError): void {
  if (lane.isClosed) return;
  lane.send(encodeLaneWelcome({ error: err.toWire() }));
  lane.end();
  // A peer that never reads must not hold the socket open.
  setTimeout(() => lane.socket.destroy(), 1000).unref();
}

/** The connecting side, its hello sent (with the connection: connectSocket's `first`): the welcome, or the refusal as a FarmError. */
export async function awaitWelcome(lane: LaneSocket, timeoutMs = HELLO_TIMEOUT_MS): Promise<void> {
  const bytes = await lane.first("welcome", timeoutMs);
  const w = decodeLaneWelcome(bytes);
  if (w.error) {
    const e = FarmError.fromWire(w.error);
    lane.fail(e);
    throw e;
  }
}
