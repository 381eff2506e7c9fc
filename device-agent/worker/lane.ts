/**
 * The worker's end of a session's lane: its ServeSession stream (grpc route)
 * or the socket its agent handed over (direct and relay routes, framed by
 * runtime/lane.ts). The worker's side of the session lifecycle reads the same
 * either way: frames in, frames out, the end frame on a clean close, and a
 * promise that settles when the lane is over.
 */
import type { Socket } from "node:net";
import * as grpc from "@grpc/grpc-js";
import { CLEAN_END_FRAME, FarmError, SESSION_ID_HEADER, SESSION_TOKEN_HEADER, decodeLaneWelcome, type AgentServiceClient } from "../../protos/index.ts";
import { LaneSocket, welcome } from "../../runtime/index.ts";
import type { FrameSink } from "./session-server.ts";

export interface WorkerLane extends FrameSink {
  onFrame(handler: (frame: Uint8Array) => void): void;
  /** Settles once the lane is over: undefined when the other side ended it in order, else why it broke. */
  readonly over: Promise<FarmError | undefined>;
  /** The session closed cleanly: the end frame goes out last, then the lane closes. */
  finish(): void;
}

/** grpc route: the worker opens the session's ServeSession stream with its ticket. */
export function grpcLane(client: AgentServiceClient, sessionId: string, ticket: string): WorkerLane {
  const metadata = new grpc.Metadata();
  metadata.set(SESSION_ID_HEADER, sessionId);
  metadata.set(SESSION_TOKEN_HEADER, ticket);
  const stream = client.ServeSession(metadata) as unknown as grpc.ClientDuplexStream<Uint8Array, Buffer>;
  const over = new Promise<FarmError | undefined>((resolve) => {
    stream.on("end", () => resolve(undefined));
    stream.on("status", (s: grpc.StatusObject) => resolve(s.code === grpc.status.OK ? undefined : FarmError.from({ ...s, message: s.details })));
    stream.on("error", (err) => resolve(FarmError.from(err)));
  });
  // Frames handed to grpc-js but not yet written to its socket (http2 writes them on a later turn).
  let unwritten = 0;
  let flushedWaiters: (() => void)[] = [];
  const written = () => {
    if (--unwritten > 0) return;
    for (const w of flushedWaiters) w();
    flushedWaiters = [];
  };
  return {
    send: (frame) => {
      unwritten++;
      return stream.write(frame, written);
    },
    flushed: () => (unwritten === 0 ? undefined : new Promise((resolve) => flushedWaiters.push(resolve))),
    drained: () => new Promise((resolve) => stream.once("drain", resolve)),
    pause: () => stream.pause(),
    resume: () => stream.resume(),
    onFrame: (handler) => stream.on("data", handler),
    over,
    finish: () => {
      stream.write(CLEAN_END_FRAME);
      stream.end();
    },
  };
}

/**
 * direct and relay routes: the socket the agent handed over, with the bytes
 * it had read past the hello. The worker opens the lane: it welcomes the host
 * (direct; the agent checked the ticket), or reads the tracker's welcome
 * (relay) — so the host sends its first frame only once the socket is here.
 */
export function socketLane(socket: Socket, rest: Buffer, kind: "direct" | "relay"): WorkerLane {
  const lane = new LaneSocket(socket, `the session's ${kind} lane`);
  // First, before anything the socket reads from now on.
  lane.unshift(rest);
  // A socket detached in this process (the standby lane) was paused there.
  socket.resume();
  let finished = false;
  const opened = kind === "direct"
    ? Promise.resolve(welcome(lane))
    : lane.first("welcome").then((bytes) => {
        const w = decodeLaneWelcome(bytes);
        if (w.error) throw FarmError.fromWire(w.error);
      });
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
    onFrame: (handler) => void opened.then(() => lane.onFrame(handler), () => {}),
    over,
    finish: () => {
      finished = true;
      lane.send(CLEAN_END_FRAME);
      lane.end();
    },
  };
}
