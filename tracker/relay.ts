/**
 * Moves session frames between a host stream and a worker stream as opaque
 * bytes, with back-pressure: when one side's send buffer is full, the other
 * side stops being read until it drains. Nothing here decodes a frame.
 */
import { CLEAN_END_FRAME } from "../protos/index.ts";

/** What the relay needs of a stream: both grpc-js call kinds satisfy it. */
export interface FrameStream {
  on(event: "data", listener: (chunk: Buffer) => void): unknown;
  once(event: "end" | "drain", listener: () => void): unknown;
  off(event: "data" | "end", listener: (...args: any[]) => void): unknown; // eslint-disable-line @typescript-eslint/no-explicit-any
  write(chunk: Buffer): boolean;
  end(): unknown;
  pause(): unknown;
  resume(): unknown;
}

export interface RelayStats {
  hostToBoardBytes: number;
  boardToHostBytes: number;
}

/**
 * The worker's last message on a cleanly closed session is the clean end
 * frame (protos/frames.ts). A live worker sends it after answering Close; a
 * worker that dies cannot, so the relay tells a clean end from a death by
 * comparing two bytes, without decoding anything.
 */
const CLEAN_END = Buffer.from(CLEAN_END_FRAME);

/** Pipes `from` into `to` until `from` ends; returns a function that stops it. */
function pump(from: FrameStream, to: FrameStream, count: (n: number) => void, onEnd: () => void, onGoodbye?: () => void): () => void {
  const onData = (chunk: Buffer) => {
    if (onGoodbye && chunk.length === CLEAN_END.length && chunk.equals(CLEAN_END)) {
      onGoodbye();
      return;
    }
    count(chunk.length);
    if (!to.write(chunk)) {
      from.pause();
      to.once("drain", () => from.resume());
    }
  };
  from.on("data", onData);
  from.once("end", onEnd);
  return () => {
    from.off("data", onData);
    from.off("end", onEnd);
  };
}

export class Relay {
  readonly stats: RelayStats = { hostToBoardBytes: 0, boardToHostBytes: 0 };
  private readonly stops: Array<() => void>;

  /**
   * A host's half-close is passed on to the board; `onBoardEnd` fires when the
   * worker half-closes, `onBoardGoodbye` when it says the session closed cleanly (its end frame is not passed on: the lease sends the host its own).
   */
  constructor(host: FrameStream, board: FrameStream, onBoardEnd: () => void, onBoardGoodbye: () => void) {
    this.stops = [
      pump(
        host,
        board,
        (n) => (this.stats.hostToBoardBytes += n),
        () => board.end(),
      ),
      // The board side's end is not forwarded: a worker that dies can look like a
      // half-close. Only its clean end frame, or its agent's report, ends the session.
      pump(board, host, (n) => (this.stats.boardToHostBytes += n), onBoardEnd, onBoardGoodbye),
    ];
  }

  stop(): void {
    for (const stop of this.stops) stop();
  }
}
