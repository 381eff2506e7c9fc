/**
 * The grpc lane's bridge between a ServeSession stream and the worker's end
 * of a socket pair: one message, one frame, both ways, undecoded; back-pressure
 * both ways; each side's end reaching the other. The pair is real (unix
 * sockets). The first suite's stream stands in for grpc-js's
 * ClientDuplexStream, which it mirrors: messages pushed in, writes held until
 * released, "status" then "end". The second faces a hostile worker (it runs a
 * tenant's code) with a real ServeSession call to a server on loopback, which
 * stands where the tracker does: what the bridge holds for the worker is
 * grpc-js's buffering, not a fake's, and what the server sees is what the
 * tracker would.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import type { Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Duplex } from "node:stream";
import { after, before, describe, it } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { AgentService, CLEAN_END_FRAME, MAX_MESSAGE_BYTES, SESSION_ID_HEADER, type AgentServiceClient, type FarmError } from "../../protos/index.ts";
import { CHANNEL_OPTIONS, LaneSocket, SERVER_OPTIONS, framed } from "../../runtime/index.ts";
import { bridgeStream, socketPair, type ServeStream } from "./lane-pair.ts";

const dir = mkdtempSync(join(tmpdir(), "kfarm-lane-pair-"));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A stream of messages: writes complete when `release()` says (one outstanding write fills it), its end comes with a status. */
class FakeStream extends Duplex {
  readonly written: Buffer[] = [];
  halfClosed = false;
  cancelled = false;
  private held: Array<() => void> = [];
  holdWrites = false;

  constructor() {
    super({ objectMode: true, writableHighWaterMark: 1 });
  }

  override _read(): void {}

  override _write(chunk: Buffer, _encoding: string, cb: () => void): void {
    this.written.push(Buffer.from(chunk));
    this.emit("message");
    if (this.holdWrites) this.held.push(cb);
    else cb();
  }

  override _final(cb: () => void): void {
    this.halfClosed = true;
    this.emit("halfClosed");
    cb();
  }

  release(): void {
    this.holdWrites = false;
    for (const cb of this.held.splice(0)) cb();
  }

  cancel(): void {
    this.cancelled = true;
    this.emit("cancelled");
  }

  /** The tracker ends the call: as grpc-js does, the readable side ends and the status follows at once. */
  finish(code: number): void {
    this.push(null);
    if (code !== 0) this.emit("error", new Error(`status ${code}`));
    this.emit("status", { code });
  }

  async messages(n: number): Promise<Buffer[]> {
    while (this.written.length < n) await once(this, "message");
    return this.written.slice(0, n);
  }
}

async function bridged(): Promise<{ stream: FakeStream; mine: Socket; worker: LaneSocket; codes: number[] }> {
  const [mine, theirs] = await socketPair(dir);
  const stream = new FakeStream();
  const codes: number[] = [];
  bridgeStream(stream, mine, (code) => codes.push(code));
  theirs.resume();
  return { stream, mine, worker: new LaneSocket(theirs, "the worker's lane"), codes };
}

function framesOf(lane: LaneSocket, n: number): Promise<Buffer[]> {
  const got: Buffer[] = [];
  return new Promise((resolve) =>
    lane.onFrame((f) => {
      got.push(Buffer.from(f));
      if (got.length === n) resolve(got);
    }),
  );
}

describe("bridgeStream (grpc lane)", () => {
  it("each frame the worker sends is one message, as it was, the clean end frame included; each message one frame to the worker", async () => {
    const { stream, worker } = await bridged();
    const big = Buffer.alloc(3 << 20, 7);
    worker.send(Buffer.from("first"));
    worker.send(big);
    worker.send(CLEAN_END_FRAME);
    const sent = await stream.messages(3);
    assert.deepEqual(
      sent.map((m) => m.length),
      [5, big.length, CLEAN_END_FRAME.length],
    );
    assert.ok(sent[1]!.equals(big));
    assert.ok(sent[2]!.equals(Buffer.from(CLEAN_END_FRAME)), "the tracker recognises the clean end by its bytes, alone in its message");

    const received = framesOf(worker, 2);
    stream.push(Buffer.from("to the worker"));
    stream.push(big);
    const frames = await received;
    assert.equal(frames[0]!.toString(), "to the worker");
    assert.ok(frames[1]!.equals(big));
    worker.socket.destroy();
  });

  it("a stream that takes no more stops the worker's socket being read until it drains", async () => {
    const { stream, mine, worker } = await bridged();
    stream.holdWrites = true;
    worker.send(Buffer.from("a"));
    worker.send(Buffer.from("b"));
    await stream.messages(1);
    assert.ok(mine.isPaused(), "the socket is paused while the stream is full");
    const resumed = once(mine, "resume");
    stream.release();
    await resumed;
    assert.deepEqual((await stream.messages(2)).map(String), ["a", "b"]);
    worker.end();
    await once(stream, "halfClosed");
  });

  it("a worker that reads nothing stops the stream being read until its socket drains", async () => {
    const [mine, theirs] = await socketPair(dir);
    const stream = new FakeStream();
    bridgeStream(stream, mine);
    // `theirs` is not read (paused since its accept): the pair fills.
    const paused = once(stream, "pause");
    for (let i = 0; i < 8; i++) stream.push(Buffer.alloc(1 << 20, i));
    await paused;
    const resumed = once(stream, "resume");
    const worker = new LaneSocket(theirs, "the worker's lane");
    const frames = framesOf(worker, 8);
    theirs.resume();
    await resumed;
    assert.deepEqual(
      (await frames).map((f) => f[0]),
      [0, 1, 2, 3, 4, 5, 6, 7],
    );
    theirs.destroy();
  });

  it("the tracker's OK ends the worker's socket in order, after every message before it", async () => {
    const { stream, worker, codes } = await bridged();
    const frames = framesOf(worker, 1);
    stream.push(Buffer.from("last"));
    stream.finish(0);
    assert.equal((await frames)[0]!.toString(), "last");
    const closed = new Promise<unknown>((resolve) => worker.onClose(resolve));
    assert.equal(await closed, null, "ended in order");
    assert.deepEqual(codes, [0]);
    assert.equal(stream.cancelled, false);
  });

  it("a worker gone mid-session half-closes the stream; a status other than OK drops the socket", async () => {
    const a = await bridged();
    a.worker.socket.destroy();
    await once(a.stream, "halfClosed");

    const b = await bridged();
    const closed = new Promise<unknown>((resolve) => b.worker.onClose(resolve));
    b.stream.finish(1);
    await closed;
    assert.deepEqual(b.codes, [1]);
    assert.ok(b.worker.isClosed);
  });
});

describe("bridgeStream facing a hostile worker (a real ServeSession call; the server stands where the tracker does)", () => {
  type ServerCall = grpc.ServerDuplexStream<Buffer, Buffer>;
  type ClientCall = grpc.ClientDuplexStream<Uint8Array, Buffer>;
  const FRAME = 1 << 20;
  const waiting = new Map<string, (call: ServerCall) => void>();
  let server: grpc.Server;
  let client: AgentServiceClient;
  let sessions = 0;

  before(async () => {
    server = new grpc.Server(SERVER_OPTIONS);
    server.addService(AgentService.service, {
      ServeSession: (call: ServerCall) => waiting.get(String(call.metadata.get(SESSION_ID_HEADER)[0]))?.(call),
    });
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
    );
    client = new AgentService(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), CHANNEL_OPTIONS) as unknown as AgentServiceClient;
  });
  after(() => {
    client.close();
    server.forceShutdown();
  });

  /** A session's lane as the agent bridges it (lanes.ts serveSession); the worker's end is not read until `readWorker`. */
  async function served(): Promise<{
    stream: ClientCall;
    call: ServerCall;
    mine: Socket;
    theirs: Socket;
    ended: Promise<{ code: number; broken: FarmError | undefined }>;
    /** What the bridge told, in order: "broke" (with the error's code) as it cut the socket, "ended" with the status. */
    told: string[];
  }> {
    const id = `s${++sessions}`;
    const arrived = new Promise<ServerCall>((resolve) => waiting.set(id, resolve));
    const [mine, theirs] = await socketPair(dir);
    const metadata = new grpc.Metadata();
    metadata.set(SESSION_ID_HEADER, id);
    const stream = client.ServeSession(metadata) as unknown as ClientCall;
    const told: string[] = [];
    const ended = new Promise<{ code: number; broken: FarmError | undefined }>((resolve) =>
      bridgeStream(
        stream as unknown as ServeStream,
        mine,
        (code, broken) => {
          told.push("ended");
          resolve({ code, broken });
        },
        (error) => told.push(`broke ${error.code}`),
      ),
    );
    const call = await arrived;
    waiting.delete(id);
    return { stream, call, mine, theirs, ended, told };
  }

  function readWorker(theirs: Socket): LaneSocket {
    const lane = new LaneSocket(theirs, "the worker's lane");
    theirs.resume();
    return lane;
  }

  function messagesOf(call: ServerCall, n: number): Promise<Buffer[]> {
    const got: Buffer[] = [];
    return new Promise((resolve) =>
      call.on("data", (m: Buffer) => {
        got.push(m);
        if (got.length === n) resolve(got);
      }),
    );
  }

  function header(length: number): Buffer {
    const h = Buffer.alloc(4);
    h.writeUInt32BE(length);
    return h;
  }

  for (const announced of [MAX_MESSAGE_BYTES + 1, 1 << 30, 0xffffffff]) {
    it(
      `a header announcing ${announced} bytes (the limit is ${MAX_MESSAGE_BYTES}) cuts the worker off at once, buffering none of it; the agent's other lanes serve on`,
      { timeout: 10_000 },
      async () => {
        const a = await served();
        const b = await served();
        const bWorker = readWorker(b.theirs);
        const worker = readWorker(a.theirs);
        const cut = new Promise<unknown>((resolve) => worker.onClose(resolve));
        const cancelled = once(a.call, "cancelled");
        const passedOn: Buffer[] = [];
        a.call.on("data", (m: Buffer) => passedOn.push(m));

        // The header, then the announced bytes as fast as the worker can write them: the cut must not wait for them.
        const offered = 8 << 20;
        a.theirs.write(header(announced));
        a.theirs.write(Buffer.alloc(offered, 0xee));
        await cut;
        await cancelled;
        const { code, broken } = await a.ended;
        assert.equal(code, grpc.status.CANCELLED, "the agent cancelled the stream: a gRPC client sends no status of its own");
        assert.equal(broken?.code, "PROTOCOL_ERROR");
        assert.equal(broken.message, `the worker's end of a grpc lane: a frame of ${announced} bytes is over the limit of ${MAX_MESSAGE_BYTES}`);
        assert.deepEqual(a.told, ["broke PROTOCOL_ERROR", "ended"], "the breach is told as the socket is cut, before the stream's status");
        assert.deepEqual(b.told, [], "the other lane's bridge told nothing");
        assert.ok(a.mine.destroyed, "the agent's end of the pair is gone");
        assert.ok(a.mine.bytesRead < 1 << 20, `the agent read ${a.mine.bytesRead} of the ${offered} bytes offered after the header`);
        assert.deepEqual(passedOn, [], "nothing of the frame reached the tracker");

        // Another session's lane on the same connection carries frames both ways still.
        const up = messagesOf(b.call, 1);
        bWorker.send(Buffer.from("still here"));
        assert.equal(String((await up)[0]), "still here");
        const down = framesOf(bWorker, 1);
        b.call.write(Buffer.from("so am I"));
        assert.equal(String((await down)[0]), "so am I");
        b.call.end();
        assert.deepEqual(await b.ended, { code: grpc.status.OK, broken: undefined });
      },
    );
  }

  it(
    "a frame cut short by the worker's socket closing half-closes the stream, passing none of it on (as a worker that died)",
    { timeout: 10_000 },
    async () => {
      const a = await served();
      readWorker(a.theirs);
      const passedOn: Buffer[] = [];
      a.call.on("data", (m: Buffer) => passedOn.push(m));
      const halfClosed = once(a.call, "end");
      a.theirs.end(framed(Buffer.alloc(100, 1)).subarray(0, 4 + 10));
      await halfClosed;
      assert.deepEqual(passedOn, []);
      // The tracker ends the call once the agent's report says why the worker went.
      a.call.end();
      assert.deepEqual(await a.ended, { code: grpc.status.OK, broken: undefined });
    },
  );

  it("a worker writing faster than the stream drains is read no further than the stream's buffer holds", { timeout: 20_000 }, async () => {
    const a = await served();
    const worker = readWorker(a.theirs);
    // The tracker reads nothing for now.
    a.call.pause();
    const n = 64;
    const paused = once(a.mine, "pause");
    for (let i = 0; i < n; i++) a.theirs.write(framed(Buffer.alloc(FRAME, i)));
    await paused;
    // A round trip the other way while the flood waits: the agent goes on serving, and reads no more of it.
    const ping = framesOf(worker, 1);
    a.call.write(Buffer.from("ping"));
    await ping;
    assert.ok(a.mine.isPaused(), "the worker's socket is not read while the stream is full");
    // The stream's buffer, the frame the lane was reading, and what is on its way (the server's window, one socket read).
    const bound = (a.stream.writableHighWaterMark + 3) * FRAME;
    assert.ok(a.mine.bytesRead <= bound, `the agent read ${a.mine.bytesRead} bytes of the worker's ${n * FRAME}, over ${bound}`);

    const all = messagesOf(a.call, n);
    a.call.resume();
    assert.deepEqual(
      (await all).map((m) => [m.length, m[0]]),
      Array.from({ length: n }, (_, i) => [FRAME, i]),
    );
    a.theirs.destroy();
  });

  it("a flood of tiny frames in one read waits for one drain, not one per frame", { timeout: 20_000 }, async () => {
    const a = await served();
    readWorker(a.theirs);
    a.call.pause();
    const n = 20_000;
    const paused = once(a.mine, "pause");
    a.theirs.write(Buffer.concat(Array.from({ length: n }, (_, i) => framed(Buffer.of(i & 0xff)))));
    // Every frame of the read that filled the stream was written to it before the pause took: one listener waits for them all.
    await paused;
    assert.ok(a.stream.writableLength > a.stream.writableHighWaterMark, "the read held more frames than the stream takes");
    assert.equal(a.stream.listenerCount("drain"), 1, "one listener waits for the stream's drain");

    const all = messagesOf(a.call, n);
    a.call.resume();
    assert.ok((await all).every((m, i) => m.length === 1 && m[0] === (i & 0xff)));
    a.theirs.destroy();
  });

  it("a worker that reads nothing stops the stream being read: what waits for it is one frame", { timeout: 20_000 }, async () => {
    const a = await served();
    const n = 64;
    const paused = once(a.stream, "pause");
    for (let i = 0; i < n; i++) a.call.write(Buffer.alloc(FRAME, i));
    await paused;
    // A round trip the other way: the worker's frames still go up while nothing comes down.
    const up = messagesOf(a.call, 1);
    a.theirs.write(framed(Buffer.from("pong")));
    assert.equal(String((await up)[0]), "pong");
    assert.ok(a.stream.isPaused(), "the stream is not read while the worker's socket is full");
    assert.ok(a.mine.writableLength <= 2 * (FRAME + 4), `${a.mine.writableLength} bytes wait for the worker`);

    const frames = framesOf(readWorker(a.theirs), n);
    assert.deepEqual(
      (await frames).map((f) => [f.length, f[0]]),
      Array.from({ length: n }, (_, i) => [FRAME, i]),
    );
    a.theirs.destroy();
  });
});
