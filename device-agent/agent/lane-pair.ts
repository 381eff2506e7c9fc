/**
 * Lanes the agent stays in the middle of (docs/architecture.md, "Lanes"): the
 * session's worker gets one end of a unix socket pair, a socket lane like any
 * other, and the agent moves the lane's bytes between the other end and where
 * they really go — a TLS socket (the agent terminates TLS: workers hold no
 * key), or the session's ServeSession stream (grpc route: the agent holds
 * the connection to the tracker and its client certificate; the worker has
 * no way to the tracker at all). Nothing here decodes a frame.
 */
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { createServer, connect as netConnect, type Socket } from "node:net";
import { join } from "node:path";
import type { FarmError } from "../../protos/index.ts";
import { LaneSocket } from "../../runtime/index.ts";

/** Two connected unix sockets (Node has no socketpair): through a listener in `dir` that lives for one connection. */
export async function socketPair(dir: string): Promise<[Socket, Socket]> {
  const path = join(dir, `pair-${randomBytes(6).toString("hex")}.sock`);
  // Paused on connect: the accepted end never reads here, so nothing is lost when it is handed to the worker.
  const server = createServer({ pauseOnConnect: true });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(path, resolve);
  });
  try {
    const accepted = new Promise<Socket>((resolve) => server.once("connection", resolve));
    const mine = netConnect(path);
    const theirs = await accepted;
    return [mine, theirs];
  } finally {
    server.close();
    rmSync(path, { force: true });
  }
}

/**
 * A byte stream (the TLS socket of a lane the agent terminates) and the
 * agent's end of the worker's pair, piped both ways, `rest` (read past the
 * hello) first. Either closing or failing closes both.
 */
export function pipeSockets(outer: Socket, mine: Socket, rest: Buffer): void {
  if (rest.length) mine.write(rest);
  outer.pipe(mine);
  mine.pipe(outer);
  const drop = () => {
    outer.destroy();
    mine.destroy();
  };
  outer.once("close", drop);
  mine.once("close", drop);
  outer.on("error", drop);
  mine.on("error", drop);
}

/**
 * What the bridge needs of a session's ServeSession call (grpc-js's
 * ClientDuplexStream, its messages passed through as bytes: protos/grpc.ts).
 */
export interface ServeStream {
  on(event: "data", listener: (message: Buffer) => void): unknown;
  on(event: "end", listener: () => void): unknown;
  on(event: "status", listener: (status: { code: number }) => void): unknown;
  on(event: "error", listener: (err: Error) => void): unknown;
  once(event: "drain", listener: () => void): unknown;
  write(message: Uint8Array): boolean;
  end(): unknown;
  cancel(): void;
  pause(): unknown;
  resume(): unknown;
}

/** After the tracker ended a stream cleanly, how long the worker's end may take to see the end and close before it is cut. */
export const BRIDGE_LINGER_MS = 2000;

/**
 * The grpc route's lane: each message of the ServeSession stream becomes one
 * frame on the worker's socket (runtime/lane.ts framing), and each frame the
 * worker sends one message, undecoded — so the tracker sees the worker's
 * bytes as they were, its clean end frame (CLEAN_END_FRAME) included, which
 * must stay one message of its own. Back-pressure both ways: a full side
 * stops the other being read until it drains.
 *
 * The worker is hostile (it runs a tenant's code): a frame header over
 * MAX_MESSAGE_BYTES (a gRPC message could not carry it) fails the lane as
 * soon as its 4 bytes are read — runtime/lane.ts, so nothing of the announced
 * frame is buffered — and the socket is destroyed. What the agent holds for
 * one lane is bounded by the back-pressure: the stream's own buffer and the
 * frames of one socket read past it, and one frame being read (a frame never
 * finished holds at most MAX_MESSAGE_BYTES, until the session ends).
 *
 * The worker's socket closing half-closes the stream (as a worker that died,
 * a partial frame included: the tracker tells a clean end by the end frame
 * before it, a dead worker by its agent's report); a socket that failed, or
 * a worker that broke the framing, cancels it (the tracker sees it
 * cancelled, a gRPC client can send no status). The stream's status ends the
 * other way: OK ends the socket once every message before it is on its way
 * to the worker; any other drops it at once (the session is over and the
 * tracker knows why). `ended` is called once, with the status's code and,
 * where the bridge cancelled the stream, why (a PROTOCOL_ERROR for a frame
 * over the limit): the tracker never hears it, so only the agent can say it.
 * `broke` is called with that PROTOCOL_ERROR as the socket is cut, so the
 * agent ends the session with it before the worker reports its lane closed.
 */
export function bridgeStream(
  stream: ServeStream,
  mine: Socket,
  ended: (code: number, broken: FarmError | undefined) => void = () => {},
  broke: (error: FarmError) => void = () => {},
): void {
  const lane = new LaneSocket(mine, "the worker's end of a grpc lane");
  let finished = false;
  let broken: FarmError | undefined;
  let awaitingDrain = false;
  lane.onFrame((frame) => {
    // What a worker still sends once the tracker ended the stream goes nowhere.
    if (finished) return;
    // One waiter, however many frames one read held: a flood of small frames must not add a listener each.
    if (!stream.write(frame) && !awaitingDrain) {
      awaitingDrain = true;
      mine.pause();
      stream.once("drain", () => {
        awaitingDrain = false;
        mine.resume();
      });
    }
  });
  stream.on("data", (message) => {
    if (lane.isClosed) return;
    if (!lane.send(message)) {
      stream.pause();
      void lane.drained().then(() => stream.resume());
    }
  });
  lane.onClose((err) => {
    if (finished) return;
    if (err) {
      broken = err;
      // At once, not with the status the cancel brings a turn later: the agent ends the session with it first.
      if (err.code === "PROTOCOL_ERROR") broke(err);
      stream.cancel();
    } else stream.end();
  });
  // The status comes first (grpc-js), then "end" once every message before it was read here: sent on, or at least buffered.
  stream.on("status", ({ code }) => {
    finished = true;
    if (code !== 0) mine.destroy();
    ended(code, broken);
  });
  stream.on("end", () => {
    if (mine.destroyed) return;
    lane.end();
    // A socket paused for a drain that will not come never reads the worker's end: let it, and cut it after a while.
    mine.resume();
    const timer = setTimeout(() => mine.destroy(), BRIDGE_LINGER_MS).unref();
    mine.once("close", () => clearTimeout(timer));
  });
  // Its status says the same.
  stream.on("error", () => {});
}
