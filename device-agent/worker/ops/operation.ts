/**
 * The contract between the session's multiplexer (session-server.ts) and the
 * operation handlers of this folder: a handler gets the session's state, the
 * request's id and body, and the multiplexer for its replies.
 */
import type { BoardFrame, HostFrame__Output } from "../../../protos/index.ts";
import type { ChunkSource } from "../files.ts";
import type { SessionState } from "../session-state.ts";

/** The name of a HostFrame's operation (session.proto's `oneof op`). */
export type Op = NonNullable<HostFrame__Output["op"]>;

/** The message a HostFrame carries for operation `K`. */
export type Body<K extends Op> = NonNullable<HostFrame__Output[K]>;

/** Handles one request (or one frame of a chunked one); a throw or rejection is replied as the request's error. */
export type Handler<K extends Op> = (s: SessionState, id: number, body: Body<K>, mux: Multiplexer) => void | Promise<void>;

export interface Operation<K extends Op> {
  handle: Handler<K>;
  /**
   * The counter each of its requests adds one to, refused ones too (so errors
   * never outnumber calls); its failures are then counted by code.
   */
  counts?: "calls" | "timeEvaluations";
  /** It runs the tenant's code (a module's constructors, a kernel), which may crash the worker. */
  runsTenantCode?: true;
}

/** What the multiplexer does for handlers. */
export interface Multiplexer {
  /** One reply; false when the sink is full (`sendChunks` waits for it). */
  reply(frame: BoardFrame): boolean;
  /**
   * `bytes` (or a file's, read as they go: SessionFiles.openRead) as Data
   * replies of at most CHUNK_BYTES, the last one `done`, waiting whenever
   * the sink is full.
   */
  sendChunks(id: number, bytes: Uint8Array | ChunkSource): Promise<void>;
  /** Whether request `id` is being assembled: it had frames before, none of them `done`. */
  assembling(id: number): boolean;
  /** Adds one frame of a chunked request to those that came before under its id. */
  assemble<B extends Chunk, S>(id: number, frame: B, how: Assembly<B, S>): void | Promise<void>;
  /** Answers Close; every later request is refused with SESSION_CLOSED. */
  close(id: number): void;
}

/** A frame of a chunked request: one id for all of them, the last one `done`. */
export interface Chunk {
  done: boolean;
}

/**
 * How the frames of one kind of chunked request come together into `S`. The
 * multiplexer keeps them by id; after a failure it replies the error once and
 * swallows the request's remaining frames.
 */
export interface Assembly<B extends Chunk, S> {
  /** The request, as named when a frame of it comes under the id of another kind of request ("an upload"). */
  readonly what: string;
  /** At the first frame: what the frames are assembled into; a throw refuses the request. */
  begin(s: SessionState, first: B): S;
  /** Each frame's data, the first frame's included; a throw or rejection refuses the request. */
  add(s: SessionState, into: S, frame: B): void | Promise<void>;
  /** After the last frame: the reply. */
  finish(s: SessionState, into: S, id: number, mux: Multiplexer): void | Promise<void>;
  /** Lets go of what `begin` took, when `add` failed or the session ended before the last frame. */
  abandon?(s: SessionState, into: S): void;
}
