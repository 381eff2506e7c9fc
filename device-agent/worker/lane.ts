/**
 * The worker's end of a session's lane, whatever the route: a socket, framed
 * by runtime/lane.ts — the host's own (direct), the tracker's data port's
 * (relay), or one end of a pair whose other end the agent holds (a TLS lane
 * it terminates, or the session's ServeSession stream on the grpc route:
 * device-agent/agent/lane-pair.ts). The worker has no way to the tracker of
 * its own. Its side of the session lifecycle reads the same on each: frames
 * in, frames out, the end frame on a clean close, and a promise that settles
 * when the lane is over.
 */
import type { Socket } from "node:net";
import { CLEAN_END_FRAME, FarmError, decodeLaneWelcome, type Lane } from "../../protos/index.ts";
import { LaneSocket, traceGrant, welcome } from "../../runtime/index.ts";
import type { FrameSink } from "./session-server.ts";
import type { LaneByteTotals } from "./lane-bytes.ts";

export interface WorkerLane extends FrameSink {
  onFrame(handler: (frame: Uint8Array) => void): void;
  /** Settles once the lane is over: undefined when the other side ended it in order, else why it broke. */
  readonly over: Promise<FarmError | undefined>;
  /**
   * The session closed cleanly: the end frame goes out last, then the lane's
   * end. Resolves once both have left this process (or the socket is gone).
   */
  finish(): Promise<void>;
  /**
   * Bytes this end of the lane read (host → board) and wrote (board → host)
   * so far, the socket's own counts (lane-bytes.ts); undefined on a relay or
   * grpc lane, whose bytes the tracker counts as it carries them.
   */
  bytes(): LaneByteTotals | undefined;
}

/**
 * The socket the agent handed over (or the standby lane took), with the bytes
 * read past the hello. The worker opens the lane: it welcomes the host
 * (direct; the agent checked the ticket), or reads the tracker's welcome
 * (relay) — so the host sends its first frame only once the socket is here.
 * A grpc lane has neither: the agent's stream showed the ticket, and the
 * tracker relays the host's frames once it is there.
 */
export function socketLane(socket: Socket, rest: Buffer, kind: Lane): WorkerLane {
  const lane = new LaneSocket(socket, `the session's ${kind} lane`);
  // First, before anything the socket reads from now on.
  lane.unshift(rest);
  // A socket detached in this process (the standby lane) was paused there.
  socket.resume();
  let finished = false;
  const opened =
    kind === "relay"
      ? lane.first("welcome").then((bytes) => {
          const w = decodeLaneWelcome(bytes);
          if (w.error) throw FarmError.fromWire(w.error);
        })
      : Promise.resolve(kind === "direct" ? (welcome(lane), traceGrant("worker: welcome written")) : undefined);
  const over = new Promise<FarmError | undefined>((resolve) => {
    opened.catch((err) => {
      lane.fail(FarmError.from(err));
      resolve(FarmError.from(err));
    });
    lane.onClose((err) => {
      if (err) resolve(err);
      else if (finished) resolve(undefined);
      // The host side went before the session was closed: the host left (or its network did).
      else resolve(new FarmError("CANCELLED", "the session's lane closed before the host closed the session"));
    });
  });
  return {
    send: (frame) => lane.send(frame),
    sendParts: (parts) => lane.sendParts(parts),
    pause: () => socket.pause(),
    resume: () => socket.resume(),
    drained: () => lane.drained(),
    flushed: () => lane.flushed(),
    onFrame: (handler) =>
      void opened.then(
        () => lane.onFrame(handler),
        () => {},
      ),
    over,
    bytes: () => (kind === "direct" ? { toBoard: socket.bytesRead, fromBoard: socket.bytesWritten ?? 0 } : undefined),
    finish: () => {
      finished = true;
      lane.send(CLEAN_END_FRAME);
      const sent =
        socket.destroyed || socket.writableFinished
          ? Promise.resolve()
          : new Promise<void>((resolve) => {
              socket.once("finish", resolve);
              socket.once("close", resolve);
            });
      lane.end();
      return sent;
    },
  };
}
