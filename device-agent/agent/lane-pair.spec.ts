/**
 * The grpc lane's bridge between a ServeSession stream and the worker's end
 * of a socket pair: one message, one frame, both ways, undecoded; back-pressure
 * both ways; each side's end reaching the other. The pair is real (unix
 * sockets); the stream stands in for grpc-js's ClientDuplexStream, which it
 * mirrors: messages pushed in, writes held until released, "status" then "end".
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import type { Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Duplex } from "node:stream";
import { after, describe, it } from "node:test";
import { CLEAN_END_FRAME } from "../../protos/index.ts";
import { LaneSocket } from "../../runtime/index.ts";
import { bridgeStream, socketPair } from "./lane-pair.ts";

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
