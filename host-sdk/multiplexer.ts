/**
 * The request multiplexer under a Session: many requests in flight on one
 * FrameChannel, each reply matched to its request by id. Chunked replies
 * (downloads, array reads) are assembled here; chunked sends (uploads, array
 * writes) go out under one id, paced by the channel's back-pressure. Once the
 * channel closes, every waiting request fails with the reason and so does
 * every later one.
 *
 * States: open → ended (the channel closed: `endReason` says why, a clean
 * end is SESSION_CLOSED). Nothing reopens.
 */
import { CHUNK_BYTES, FarmError, decodeBoardFrame, encodeHostFrame, encodeHostFrameParts, type BoardFrame__Output, type HostFrame } from "../protos/index.ts";
import type { FrameChannel } from "./frame-channel.ts";

/** A request as the caller writes it: the multiplexer gives it its id. */
export type Op = Omit<HostFrame, "id">;

interface Reply {
  frame: BoardFrame__Output;
  /** Assembled chunked data (download, array read). */
  data: Buffer | undefined;
}

interface Waiting {
  resolve(reply: Reply): void;
  reject(err: FarmError): void;
  /** Chunked replies (download, array read) are assembled here. */
  assembled?: Buffer;
}

/** @internal Session's transport; hosts use Session. */
export class Multiplexer {
  private nextId = 1;
  private readonly waiting = new Map<number, Waiting>();
  private reason: FarmError | undefined;
  private resolveEnded!: () => void;
  /** Resolves once the channel has closed, cleanly or not. */
  readonly ended = new Promise<void>((r) => (this.resolveEnded = r));

  /** `sessionId` names the session in the errors of requests after its end. */
  constructor(
    private readonly channel: FrameChannel,
    private readonly sessionId: string,
  ) {
    channel.onFrame((bytes) => this.onFrame(bytes));
    channel.onClose((reason) => this.onClose(reason));
  }

  /**
   * Why the channel closed, once it has — or is closing: once the tracker's
   * end came, the session takes no new request even while the answers sent
   * before it are still read (frame-channel.ts, `draining`).
   */
  get endReason(): FarmError | undefined {
    if (this.reason) return this.reason;
    const ending = this.channel.ending?.();
    return ending && (ending.reason ?? this.closedCleanly());
  }

  private closedCleanly(): FarmError {
    return new FarmError("SESSION_CLOSED", `session ${this.sessionId} is closed`);
  }

  /** One request, one reply. */
  async request(op: Op): Promise<BoardFrame__Output> {
    this.checkOpen();
    const id = this.nextId++;
    const reply = this.expect(id);
    if (!this.channel.send(encodeHostFrame({ id, ...op }))) {
      // The caller waits for room before it sends more; but a channel that closes while its buffer is full may never
      // drain (a gRPC stream), and the close fails the reply: that ends the wait.
      const drained = this.channel.drained();
      await Promise.race([
        drained,
        reply.then(
          () => drained,
          () => {},
        ),
      ]);
    }
    return (await reply).frame;
  }

  /** Sends `bytes` in chunks under one request id; one reply at the end. */
  async sendChunked(bytes: Uint8Array, op: (chunk: Uint8Array, offset: number, done: boolean) => Op | Promise<Op>): Promise<BoardFrame__Output> {
    this.checkOpen();
    const id = this.nextId++;
    const reply = this.expect(id);
    let offset = 0;
    do {
      const end = Math.min(bytes.byteLength, offset + CHUNK_BYTES);
      // Awaited only when `op` is asynchronous: a synchronous first frame goes out before this call returns, so a
      // request made right after it (a module's load after its upload) follows it on the lane.
      const made = op(bytes.subarray(offset, end), offset, end === bytes.byteLength);
      const frame = made instanceof Promise ? await made : made;
      // Stop early when the board already answered (it refused the transfer) while this side waited for room or for
      // `op`: no piece goes out after the refusal.
      if (!this.waiting.has(id)) break;
      const ok = this.channel.sendParts(encodeHostFrameParts({ id, ...frame }));
      offset = end;
      if (!ok) await Promise.race([this.channel.drained(), reply.catch(() => {})]);
    } while (offset < bytes.byteLength);
    return (await reply).frame;
  }

  /** A request whose reply comes in chunks; resolves to the assembled bytes. */
  async fetchChunked(op: Op): Promise<Buffer> {
    this.checkOpen();
    const id = this.nextId++;
    const reply = this.expect(id);
    this.channel.send(encodeHostFrame({ id, ...op }));
    return (await reply).data ?? Buffer.alloc(0);
  }

  /** No more frames from this side; the board's end of the channel follows. */
  end(): void {
    this.channel.end();
  }

  /**
   * The reply to `id`. It may fail (the board's refusal, the channel's close)
   * while its request still waits for room or for its next piece, before
   * anyone awaits it: that is not an unhandled rejection, its request throws
   * it when it gets there.
   */
  private expect(id: number): Promise<Reply> {
    const reply = new Promise<Reply>((resolve, reject) => this.waiting.set(id, { resolve, reject }));
    reply.catch(() => {});
    return reply;
  }

  private checkOpen(): void {
    const e = this.endReason;
    if (!e) return;
    if (e.code === "SESSION_CLOSED") throw new FarmError("SESSION_CLOSED", e.message);
    // The end's details hold for every later request too (a lost device context stays lost).
    throw new FarmError(e.code, `session ${this.sessionId} has ended: ${e.message}`, e.details ? { details: e.details } : {});
  }

  private onFrame(bytes: Uint8Array): void {
    let frame: BoardFrame__Output;
    try {
      frame = decodeBoardFrame(bytes);
    } catch (err) {
      this.onClose(new FarmError("PROTOCOL_ERROR", `the board sent an undecodable frame: ${(err as Error).message}`));
      this.channel.abort();
      return;
    }
    const w = this.waiting.get(frame.id);
    if (!w) return;
    if (frame.result === "data") {
      const d = frame.data!;
      w.assembled ??= Buffer.allocUnsafe(d.total_bytes);
      w.assembled.set(d.data, d.offset);
      if (!d.done) return;
    }
    this.waiting.delete(frame.id);
    if (frame.result === "error") w.reject(FarmError.fromWire(frame.error!));
    else w.resolve({ frame, data: w.assembled });
  }

  private onClose(reason: FarmError | null): void {
    if (this.reason) return;
    this.reason = reason ?? this.closedCleanly();
    for (const w of this.waiting.values()) w.reject(this.reason);
    this.waiting.clear();
    this.resolveEnded();
  }
}
