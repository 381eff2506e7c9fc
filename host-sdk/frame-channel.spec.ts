/**
 * The shell of the host's session lifecycle (frame-channel.ts SessionChannel
 * around channel-machine.ts) on real sockets: a loopback "agent" that
 * welcomes the lane as the farm's does, and the worker's side of the lane;
 * the Session stream, which grpc-js makes in the farm, is a plain duplex here
 * carrying the grant and the tracker's end frame. The machine's every row is
 * in channel-machine.spec.ts; these check that the shell performs them.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:net";
import { PassThrough } from "node:stream";
import { once } from "node:events";
import { Metadata, status } from "@grpc/grpc-js";
import { CLEAN_END_FRAME, FarmError, encodeBoardFrame, encodeEndFrame, encodeGrantFrame, type Route } from "../protos/index.ts";
import { LaneSocket, acceptHello, refuse, welcome } from "../runtime/index.ts";
import { SessionChannel, type SessionStream } from "./frame-channel.ts";
import { Multiplexer } from "./multiplexer.ts";

/** A Session stream as the channel sees it: a duplex of messages that can be cancelled. */
class FakeStream extends PassThrough {
  cancelled = 0;
  constructor() {
    super({ objectMode: true });
  }
  cancel(): void {
    this.cancelled++;
  }
  /** A message from the tracker. */
  say(frame: Uint8Array): void {
    this.push(Buffer.from(frame));
  }
}

/** A loopback agent that welcomes each lane (unless `hold`: then it answers when told) and hands over the worker's side. */
async function agent(opts: { hold?: boolean } = {}): Promise<{ address: string; port: number; worker: Promise<LaneSocket>; release(): void; server: Server }> {
  let handOver!: (lane: LaneSocket) => void;
  const worker = new Promise<LaneSocket>((resolve) => (handOver = resolve));
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  if (!opts.hold) release();
  const server = createServer((socket) => {
    const lane = new LaneSocket(socket, "the test agent's lane");
    void acceptHello(lane).then(async () => {
      await held;
      welcome(lane);
      handOver(lane);
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const port = (server.address() as { port: number }).port;
  return { address: `127.0.0.1:${port}`, port, worker, release, server };
}

function grantFrame(route: Route, directAddress: string, relayPort = 0, workerAddress = ""): Uint8Array {
  return encodeGrantFrame({
    session_id: "s1",
    ticket: "t1",
    route,
    direct_address: directAddress,
    worker_address: workerAddress,
    relay_port: relayPort,
    board: { id: "b1" },
    end_grace_ms: 10,
  });
}

/** A channel on a fake Session stream whose grant offers `route`; resolves once its lane is open. */
async function opened(
  route: Route,
  directAddress: string,
  relayPort = 0,
): Promise<{ stream: FakeStream; channel: SessionChannel; lane: string; note?: string }> {
  const stream = new FakeStream();
  const channel = new SessionChannel(stream as unknown as SessionStream, { tracker: "127.0.0.1:1", security: {}, directTimeoutMs: 1000 });
  stream.say(grantFrame(route, directAddress, relayPort));
  const grant = await channel.granted;
  assert.equal(grant.session_id, "s1");
  const { lane, note } = await channel.opened;
  return { stream, channel, lane, ...(note ? { note } : {}) };
}

describe("SessionChannel: opening", () => {
  it("dials the direct lane a grant offers, and is open on it", async () => {
    const a = await agent();
    const { channel, lane } = await opened("direct", a.address);
    assert.equal(lane, "direct");
    assert.equal(channel.phase, "open");
    channel.abort();
    (await a.worker).socket.destroy();
    a.server.close();
  });

  it("auto: a direct lane that cannot be reached falls back to the relay, and says why", async () => {
    const a = await agent();
    const closed = await agent();
    closed.server.close();
    const { channel, lane, note } = await opened("auto", closed.address, a.port);
    assert.equal(lane, "relay");
    assert.match(note ?? "", new RegExp(`^the direct lane to ${closed.address} failed \\(.*\\); fell back to the tracker's relay$`));
    channel.abort();
    (await a.worker).socket.destroy();
    a.server.close();
  });

  it("a lease that ends while its lane is dialled fails the open with why; the stream is cancelled and the lane closed", async () => {
    const a = await agent({ hold: true });
    const stream = new FakeStream();
    const channel = new SessionChannel(stream as unknown as SessionStream, { tracker: "127.0.0.1:1", security: {}, directTimeoutMs: 1000 });
    stream.say(grantFrame("direct", a.address));
    await channel.granted;
    stream.emit("error", new FarmError("AGENT_LOST", "board b1 was lost").toGrpc());
    a.release();
    await assert.rejects(channel.opened, (e: FarmError) => e.code === "AGENT_LOST");
    assert.equal(stream.cancelled, 1);
    const worker = await a.worker;
    // The host ended its side of the lane: the worker's side sees it.
    await once(worker.socket.resume(), "end");
    worker.socket.destroy();
    a.server.close();
  });

  it("a direct lane that is refused fails the open, and the stream is cancelled so that the lease goes back at once", async () => {
    const closed = await agent();
    closed.server.close();
    const stream = new FakeStream();
    const channel = new SessionChannel(stream as unknown as SessionStream, { tracker: "127.0.0.1:1", security: {}, directTimeoutMs: 1000 });
    stream.say(grantFrame("direct", closed.address));
    await assert.rejects(channel.opened, (e: FarmError) => e.code === "UNAVAILABLE" && e.message.includes("(direct lane)"));
    assert.equal(stream.cancelled, 1);
  });
});

/**
 * A loopback standby lane: reads the hello and every frame the host sends
 * before its answer (`holdMs`), then welcomes it or refuses it with `refusal`.
 */
async function standby(refusal?: FarmError): Promise<{ address: string; before: Promise<Buffer[]>; server: Server; lane: Promise<LaneSocket> }> {
  let resolveBefore!: (frames: Buffer[]) => void;
  const before = new Promise<Buffer[]>((resolve) => (resolveBefore = resolve));
  let resolveLane!: (lane: LaneSocket) => void;
  const laneP = new Promise<LaneSocket>((resolve) => (resolveLane = resolve));
  const server = createServer((socket) => {
    const lane = new LaneSocket(socket, "the test standby lane");
    void acceptHello(lane).then(() => {
      // The host does not wait for the welcome: its first frames follow the hello.
      const frames: Buffer[] = [];
      lane.onFrame((f) => {
        frames.push(f);
        if (frames.length === 2) {
          resolveBefore(frames);
          if (refusal) refuse(lane, refusal);
          else {
            welcome(lane);
            resolveLane(lane);
          }
        }
      });
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return { address: `127.0.0.1:${(server.address() as { port: number }).port}`, before, server, lane: laneP };
}

/** A channel granted `w`'s standby lane (an agent behind it), open, with two frames sent on it and read by `w`. */
async function sentTwo(w: Awaited<ReturnType<typeof standby>>) {
  const a = await agent();
  const stream = new FakeStream();
  const channel = new SessionChannel(stream as unknown as SessionStream, { tracker: "127.0.0.1:1", security: {}, directTimeoutMs: 1000 });
  stream.say(grantFrame("direct", a.address, 0, w.address));
  assert.equal((await channel.opened).lane, "direct");
  channel.send(Buffer.from("one"));
  channel.send(Buffer.from("two"));
  assert.deepEqual((await w.before).map(String), ["one", "two"], "both frames reached the worker before it answered the hello");
  return { a, stream, channel };
}

describe("SessionChannel: a standby lane used before its welcome", () => {
  it("is open once connected: the first frames go out with the hello, and the worker's answers arrive after its welcome", async () => {
    const w = await standby();
    const { a, channel } = await sentTwo(w);
    const answers: Buffer[] = [];
    channel.onFrame((f) => answers.push(Buffer.from(f)));
    const lane = await w.lane;
    lane.send(Buffer.from("answer"));
    await waitUntil(() => answers.length === 1);
    assert.equal(String(answers[0]), "answer");
    channel.abort();
    lane.socket.destroy();
    w.server.close();
    a.server.close();
  });

  it("a worker that moved on refuses after the frames: they go again, in order, on the agent's port, and the session goes on there", async () => {
    const w = await standby(new FarmError("NOT_FOUND", 'no session "s1" here'));
    const { a, channel } = await sentTwo(w);
    const worker = await a.worker;
    const got: string[] = [];
    worker.onFrame((f) => got.push(String(f)));
    channel.send(Buffer.from("three"));
    await waitUntil(() => got.length === 3);
    assert.deepEqual(got, ["one", "two", "three"]);
    const answers: string[] = [];
    channel.onFrame((f) => answers.push(String(f)));
    worker.send(Buffer.from("answer"));
    await waitUntil(() => answers.length === 1);
    assert.equal(channel.phase, "open");
    channel.abort();
    worker.socket.destroy();
    w.server.close();
    a.server.close();
  });

  it("a refusal that is not a worker moved on closes the lane with it", async () => {
    const w = await standby(new FarmError("PERMISSION_DENIED", "the ticket for session s1 expired 5 ms ago"));
    const { a, stream, channel } = await sentTwo(w);
    await waitUntil(() => channel.phase !== "open");
    assert.equal(channel.phase, "closing", "the lane closed without the worker's clean end: the tracker's end is awaited");
    stream.say(encodeEndFrame(new FarmError("CANCELLED", "session s1's lane did not open").toWire()));
    await waitUntil(() => channel.phase === "closed");
    w.server.close();
    a.server.close();
  });
});

/** Polls `ok` on the event loop (real sockets): each turn lets I/O through. */
async function waitUntil(ok: () => boolean, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > until) throw new Error("timed out");
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe("SessionChannel: a socket lane's end", () => {
  it("the worker's clean end and the lane's close end the session at once, without the tracker's end", async () => {
    const a = await agent();
    const { stream, channel } = await opened("direct", a.address);
    const closed = new Promise<FarmError | null>((resolve) => channel.onClose(resolve));
    const worker = await a.worker;
    worker.send(CLEAN_END_FRAME);
    worker.end();
    assert.equal(await closed, null);
    // The lease is over: the host's side of the Session stream ended too.
    assert.equal(stream.writableEnded, true);
    worker.socket.destroy();
    a.server.close();
  });

  it("a lane that closes without the worker's clean end waits for the tracker's end, which says why", async () => {
    const a = await agent();
    const { stream, channel } = await opened("direct", a.address);
    const closed = new Promise<FarmError | null>((resolve) => channel.onClose(resolve));
    const worker = await a.worker;
    worker.socket.destroy();
    await new Promise<void>((resolve) => worker.onClose(() => resolve()));
    while (channel.phase !== "closing") await new Promise<void>((resolve) => setImmediate(resolve));
    stream.say(encodeEndFrame(new FarmError("RUNTIME_CRASH", "the session worker died").toWire()));
    assert.equal((await closed)?.code, "RUNTIME_CRASH");
    a.server.close();
  });

  it("reads the answers a worker sent before it crashed, even when the tracker's end overtakes them", async () => {
    const a = await agent();
    const { stream, channel } = await opened("direct", a.address);
    const seen: string[] = [];
    channel.onFrame((frame) => seen.push(`frame ${Buffer.from(frame).toString()}`));
    const closed = new Promise<FarmError | null>((resolve) => channel.onClose(resolve));
    const worker = await a.worker;
    // The worker's answer is in this host's socket buffer, unread, when the tracker says the worker crashed.
    worker.send(Buffer.from("answer"));
    worker.socket.destroy();
    const crashed = new FarmError("RUNTIME_CRASH", "the session worker died");
    stream.say(encodeEndFrame(crashed.toWire()));
    // As the tracker does, the stream's status follows the end frame: it must not cut the drain short.
    stream.emit("status", { code: status.ABORTED, details: crashed.message, metadata: new Metadata() });
    const end = await closed;
    seen.push(`end ${end?.code}`);
    assert.deepEqual(seen, ["frame answer", "end RUNTIME_CRASH"]);
    a.server.close();
  });

  it("a lane that stays open after the tracker's end is closed after LANE_DRAIN_MS with the tracker's reason", async () => {
    const a = await agent();
    const { stream, channel } = await opened("direct", a.address);
    const closed = new Promise<FarmError | null>((resolve) => channel.onClose(resolve));
    stream.say(encodeEndFrame(new FarmError("TIMEOUT", "the session's time is up").toWire()));
    assert.equal((await closed)?.code, "TIMEOUT");
    const worker = await a.worker;
    await once(worker.socket.resume(), "end");
    worker.socket.destroy();
    a.server.close();
  });

  it("once the tracker's end came, a session takes no new request, while the answer already on its way still arrives", async () => {
    const a = await agent();
    const { stream, channel } = await opened("direct", a.address);
    const mux = new Multiplexer(channel, "s1");
    const waiting = mux.request({ listdir: {} });
    // The worker has not answered yet when its agent is lost: a kept session must not be handed a new candidate now.
    stream.say(encodeEndFrame(new FarmError("AGENT_LOST", "board b1 was lost").toWire()));
    await new Promise<void>((resolve) => setImmediate(resolve));
    assert.equal(mux.endReason?.code, "AGENT_LOST", "the session counts as ended");
    await assert.rejects(mux.request({ listdir: {} }), (e: FarmError) => e.code === "AGENT_LOST");
    const worker = await a.worker;
    worker.send(encodeBoardFrame({ id: 1, listing: { entries: [] } }));
    worker.socket.destroy();
    assert.deepEqual((await waiting).listing?.entries, [], "the answer sent before the end reached its request");
    a.server.close();
  });
});

describe("SessionChannel: the grpc lane", () => {
  it("frames ride the Session stream after the grant; the tracker's end frame closes it with its reason", async () => {
    const { stream, channel, lane } = await opened("grpc", "");
    assert.equal(lane, "grpc");
    const seen: string[] = [];
    channel.onFrame((frame) => seen.push(Buffer.from(frame).toString()));
    const closed = new Promise<FarmError | null>((resolve) => channel.onClose(resolve));
    stream.say(Buffer.from("answer"));
    stream.say(encodeEndFrame(new FarmError("SESSION_TIMEOUT", "the session's time is up").toWire()));
    assert.equal((await closed)?.code, "SESSION_TIMEOUT");
    assert.deepEqual(seen, ["answer"]);
  });

  it("a Session stream that breaks with no farm code: the tracker went away, UNAVAILABLE naming it", async () => {
    const { stream, channel } = await opened("grpc", "");
    const closed = new Promise<FarmError | null>((resolve) => channel.onClose(resolve));
    stream.emit(
      "error",
      Object.assign(new Error("14 UNAVAILABLE: Connection dropped"), { code: status.UNAVAILABLE, details: "Connection dropped", metadata: new Metadata() }),
    );
    const end = await closed;
    assert.equal(end?.code, "UNAVAILABLE");
    assert.match(end!.message, /^the tracker at 127\.0\.0\.1:1 went away \(/);
  });
});
