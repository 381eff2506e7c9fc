/**
 * The host's side of a socket lane's end (frame-channel.ts's `draining`): a
 * real socket pair on loopback for the lane; the Session stream, which grpc-js
 * makes in the farm, is a plain duplex here carrying the tracker's end frame.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer, connect, type Socket } from "node:net";
import { PassThrough } from "node:stream";
import { once } from "node:events";
import { Metadata, status } from "@grpc/grpc-js";
import { FarmError, encodeBoardFrame, encodeEndFrame } from "../protos/index.ts";
import { LaneSocket, framed } from "../runtime/index.ts";
import { LaneChannel, type SessionStream } from "./frame-channel.ts";
import { Multiplexer } from "./multiplexer.ts";

async function socketPair(): Promise<[Socket, Socket]> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const port = (server.address() as { port: number }).port;
  const accepted = once(server, "connection");
  const client = connect(port, "127.0.0.1");
  const [worker] = (await accepted) as [Socket];
  await once(client, "connect");
  server.close();
  return [client, worker];
}

describe("LaneChannel", () => {
  it("reads the answers a worker sent before it crashed, even when the tracker's end overtakes them", async () => {
    const [host, worker] = await socketPair();
    const stream = new PassThrough() as unknown as SessionStream;
    const channel = new LaneChannel(stream, "127.0.0.1:1", new LaneSocket(host, "a test lane"), "direct", 5000);
    const seen: string[] = [];
    channel.onFrame((frame) => seen.push(`frame ${Buffer.from(frame).toString()}`));
    const closed = new Promise<FarmError | null>((resolve) => channel.onClose(resolve));
    // The worker's answer is in this host's socket buffer, unread, when the tracker says the worker crashed.
    worker.write(framed(Buffer.from("answer")));
    worker.destroy();
    const crashed = new FarmError("RUNTIME_CRASH", "the session worker died");
    (stream as unknown as PassThrough).write(encodeEndFrame(crashed.toWire()));
    // As the tracker does, the stream's status follows the end frame: it must not cut the drain short.
    (stream as unknown as PassThrough).emit("status", { code: status.ABORTED, details: crashed.message, metadata: new Metadata() });
    const end = await closed;
    seen.push(`end ${end?.code}`);
    assert.deepEqual(seen, ["frame answer", "end RUNTIME_CRASH"]);
  });

  it("a lane that stays open after the tracker's end is closed after LANE_DRAIN_MS with the tracker's reason", async () => {
    const [host, worker] = await socketPair();
    const stream = new PassThrough() as unknown as SessionStream;
    const channel = new LaneChannel(stream, "127.0.0.1:1", new LaneSocket(host, "a test lane"), "direct", 5000);
    const closed = new Promise<FarmError | null>((resolve) => channel.onClose(resolve));
    (stream as unknown as PassThrough).write(encodeEndFrame(new FarmError("TIMEOUT", "the session's time is up").toWire()));
    assert.equal((await closed)?.code, "TIMEOUT");
    await once(worker.resume(), "end");
    worker.destroy();
  });

  it("once the tracker's end came, a session takes no new request, while the answer already on its way still arrives", async () => {
    const [host, worker] = await socketPair();
    const stream = new PassThrough() as unknown as SessionStream;
    const mux = new Multiplexer(new LaneChannel(stream, "127.0.0.1:1", new LaneSocket(host, "a test lane"), "direct", 5000), "s1");
    const waiting = mux.request({ listdir: {} });
    // The worker has not answered yet when its agent is lost: a kept session must not be handed a new candidate now.
    (stream as unknown as PassThrough).write(encodeEndFrame(new FarmError("AGENT_LOST", "board b1 was lost").toWire()));
    await new Promise<void>((resolve) => setImmediate(resolve));
    assert.equal(mux.endReason?.code, "AGENT_LOST", "the session counts as ended");
    await assert.rejects(mux.request({ listdir: {} }), (e: FarmError) => e.code === "AGENT_LOST");
    worker.write(framed(encodeBoardFrame({ id: 1, listing: { entries: [] } })));
    worker.destroy();
    assert.deepEqual((await waiting).listing?.entries, [], "the answer sent before the end reached its request");
  });
});
