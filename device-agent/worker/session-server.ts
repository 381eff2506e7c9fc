/**
 * Serves one session's frames on one board: the multiplexer. Frames are
 * decoded and handled strictly in order, each by its operation's handler
 * (ops/); every request gets a reply (or, for chunked reads, replies) with
 * its id, an error included. Chunked requests (one id across several frames)
 * are assembled here.
 */
import {
  CHUNK_BYTES,
  FarmError,
  decodeHostFrame,
  encodeBoardFrame,
  encodeBoardFrameParts,
  type BoardFrame,
  type HostFrame__Output,
} from "../../protos/index.ts";
import { dirname } from "node:path";
import type { Backend } from "../backends/index.ts";
import { withoutAgentPaths } from "./file-errors.ts";
import { OPERATIONS, type Assembly, type Chunk, type Multiplexer, type Op } from "./ops/index.ts";
import { SessionState, type SessionHooks } from "./session-state.ts";
import type { SessionLimits } from "../common/worker-spawn.ts";
import type { ChunkSource } from "./files.ts";

export { RequestCounters, type RequestCounts } from "../common/request-counters.ts";
export type { SessionHooks } from "./session-state.ts";
export type { SessionLimits } from "../common/worker-spawn.ts";

/** Frames waiting to be handled, at most (8 MiB of upload chunks) before the lane stops reading. */
const MAX_QUEUED_FRAMES = 8;

/** Where replies go; `send` returns false when the caller should wait for `drained`. */
export interface FrameSink {
  /** Stop reading frames from the host / go on (the queue is full / has room again). */
  pause?(): void;
  resume?(): void;
  send(frame: Uint8Array): boolean;
  /** One frame as parts (encodeBoardFrameParts): a socket lane writes them as they are. */
  sendParts?(parts: readonly Uint8Array[]): boolean;
  drained(): Promise<void>;
  /** Resolves once every reply sent so far has left this process; undefined when it already has. */
  flushed(): Promise<void> | undefined;
}

/** A chunked request whose last frame has not come yet. */
interface Pending {
  /** Every frame of the request must be of this kind. */
  readonly how: Assembly<Chunk, unknown>;
  /** What `how.begin` made. */
  into: unknown;
  /** The error was replied: the request's remaining frames are swallowed. */
  failed: boolean;
}

export class SessionServer {
  private readonly session: SessionState;
  private readonly workdir: string;
  private readonly chunked = new Map<number, Pending>();
  private queue: HostFrame__Output[] = [];
  /** The lane was told to stop reading (the queue is full). */
  private held = false;
  private running = false;
  private closeRequested = false;
  private resolveClosed!: () => void;
  /** Resolves when the host asked to close and the reply went out. */
  readonly closed = new Promise<void>((r) => (this.resolveClosed = r));
  /** This multiplexer as handlers see it. */
  private readonly mux: Multiplexer = {
    reply: (frame) => this.reply(frame),
    sendChunks: (id, bytes) => this.sendChunks(id, bytes),
    assembling: (id) => this.chunked.has(id),
    assemble: (id, frame, how) => this.assemble(id, frame, how),
    close: (id) => this.close(id),
  };

  constructor(
    backend: Backend,
    workdir: string,
    limits: SessionLimits,
    private readonly sink: FrameSink,
    hooks: SessionHooks = {},
  ) {
    this.session = new SessionState(backend, workdir, limits, hooks);
    this.workdir = workdir;
  }

  /** One encoded HostFrame from the host. */
  receive(bytes: Uint8Array): void {
    let frame: HostFrame__Output;
    try {
      frame = decodeHostFrame(bytes);
    } catch (err) {
      this.reply({ id: 0, error: new FarmError("PROTOCOL_ERROR", `undecodable frame: ${(err as Error).message}`).toWire() });
      return;
    }
    this.queue.push(frame);
    // Frames arrive while earlier ones are handled (an upload's chunks while the last is written): past a few, the
    // lane stops reading, so a host faster than the board's disk fills the socket's buffers, not this process.
    if (this.queue.length >= MAX_QUEUED_FRAMES && !this.held) {
      this.held = true;
      this.sink.pause?.();
    }
    if (!this.running) void this.pump();
  }

  /** Frees everything the session holds (arrays, open uploads). */
  dispose(): void {
    for (const pending of this.chunked.values()) if (!pending.failed) pending.how.abandon?.(this.session, pending.into);
    this.chunked.clear();
    this.session.dispose();
  }

  private async pump(): Promise<void> {
    this.running = true;
    try {
      while (this.queue.length > 0) {
        const frame = this.queue.shift()!;
        if (this.held && this.queue.length < MAX_QUEUED_FRAMES / 2) {
          this.held = false;
          this.sink.resume?.();
        }
        try {
          // A tenant's code may crash this process, taking with it what is still in its buffers: the answers to
          // earlier requests leave first, so that a crash is charged to the request that caused it alone.
          if (frame.op && OPERATIONS[frame.op].runsTenantCode) {
            const flushing = this.sink.flushed();
            if (flushing) await flushing;
          }
          const done = this.handle(frame);
          if (done) await done;
        } catch (err) {
          this.fail(frame, err);
        } finally {
          // What the tenant's code printed reaches the agent in step with the answers (worker/c-stdio.ts).
          if (this.session.nativeCodeLoaded && frame.op && OPERATIONS[frame.op].runsTenantCode) this.session.hooks.flushOutput?.();
        }
      }
    } finally {
      this.running = false;
    }
  }

  private handle(f: HostFrame__Output): void | Promise<void> {
    // Counted before any refusal: errors never outnumber calls.
    const counts = f.op && OPERATIONS[f.op].counts;
    if (counts) this.session.counters[counts]++;
    if (this.closeRequested) throw new FarmError("SESSION_CLOSED", "the session is closing");
    if (!f.op) throw new FarmError("PROTOCOL_ERROR", `frame ${f.id} carries no known operation`);
    return this.dispatch(f.op, f);
  }

  /** Generic in the operation, so that its handler and its body are known to belong together. */
  private dispatch<K extends Op>(op: K, f: HostFrame__Output): void | Promise<void> {
    return OPERATIONS[op].handle(this.session, f.id, f[op]!, this.mux);
  }

  private fail(f: HostFrame__Output, err: unknown): void {
    const e = this.hostError(err);
    if (f.op && OPERATIONS[f.op].counts) this.session.counters.failed(e.code);
    this.reply({ id: f.id, error: e.toWire() });
  }

  /**
   * An error as the host may see it: no path of the agent's in its message
   * (a library's own words — dlopen's, say — name the files it was given;
   * file system errors are mapped where they happen, worker/file-errors.ts).
   */
  private hostError(err: unknown): FarmError {
    const e = FarmError.from(err);
    const message = withoutAgentPaths(e.message, this.workdir, dirname(this.workdir));
    return message === e.message ? e : new FarmError(e.code, message, { cause: e, ...(e.details ? { details: e.details } : {}) });
  }

  private reply(frame: BoardFrame): boolean {
    return this.sink.send(encodeBoardFrame(frame));
  }

  private async sendChunks(id: number, from: Uint8Array | ChunkSource): Promise<void> {
    const source: ChunkSource = from instanceof Uint8Array ? { size: from.byteLength, read: (offset, length) => from.subarray(offset, offset + length) } : from;
    try {
      const total = source.size;
      let offset = 0;
      do {
        const end = Math.min(total, offset + CHUNK_BYTES);
        const frame = { id, data: { data: source.read(offset, end - offset), offset, total_bytes: total, done: end === total } };
        const ok = this.sink.sendParts ? this.sink.sendParts(encodeBoardFrameParts(frame)) : this.reply(frame);
        offset = end;
        if (!ok) await this.sink.drained();
      } while (offset < total);
    } finally {
      source.close?.();
    }
  }

  private assemble<B extends Chunk, S>(id: number, frame: B, how: Assembly<B, S>): void | Promise<void> {
    let pending = this.chunked.get(id);
    if (!pending) {
      pending = { how, into: undefined, failed: false };
      this.chunked.set(id, pending);
      try {
        pending.into = how.begin(this.session, frame);
      } catch (err) {
        return this.refuse(id, pending, frame.done, err);
      }
    }
    if (pending.how !== how) throw new FarmError("PROTOCOL_ERROR", `frame ${id} mixes ${how.what} into another request`);
    if (pending.failed) return this.refuse(id, pending, frame.done); // failed earlier: swallow the rest
    const into = pending.into as S; // made by this same `how`
    const failed = (err: unknown) => {
      how.abandon?.(this.session, into);
      this.refuse(id, pending, frame.done, err);
    };
    const added = () => {
      if (!frame.done) return;
      this.chunked.delete(id);
      return how.finish(this.session, into, id, this.mux);
    };
    let adding;
    try {
      adding = how.add(this.session, into, frame);
    } catch (err) {
      return failed(err);
    }
    return adding ? adding.then(added, failed) : added();
  }

  /** For a chunked request that failed: reply with the error once, forget it after its last frame. */
  private refuse(id: number, pending: Pending, done: boolean, err?: unknown): void {
    if (err !== undefined) this.reply({ id, error: this.hostError(err).toWire() });
    if (done) this.chunked.delete(id);
    else pending.failed = true;
  }

  private close(id: number): void {
    this.closeRequested = true;
    this.reply({ id, ok: {} });
    this.resolveClosed();
  }
}
