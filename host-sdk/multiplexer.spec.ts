/**
 * The request multiplexer (multiplexer.ts) over a FrameChannel held in
 * memory: the channel is the multiplexer's only neighbour, and its interface
 * is small — what is sent is decoded here as the board would, what the board
 * says is delivered as frames, and the end is the channel's close (or, while
 * a socket lane drains, its `ending()`). The channel's own lifecycle is
 * channel-machine.spec.ts's and frame-channel.spec.ts's.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CHUNK_BYTES, FarmError, decodeHostFrame, encodeBoardFrame, type BoardFrame, type HostFrame__Output } from "../protos/index.ts";
import type { FrameChannel } from "./frame-channel.ts";
import { Multiplexer } from "./multiplexer.ts";

/** A FrameChannel in memory: records what the host sends, delivers what the test has the board say, closes when told. */
class MemoryChannel implements FrameChannel {
  readonly sent: HostFrame__Output[] = [];
  /** false: the next sends report a full buffer until `drain()`. */
  room = true;
  ended = 0;
  aborted = 0;
  /** What `ending()` says: the tracker's end while the lane drains. */
  trackerEnd: { reason: FarmError | null } | undefined;
  private frameHandler: ((frame: Uint8Array) => void) | undefined;
  private closeHandler: ((reason: FarmError | null) => void) | undefined;
  private readonly drainWaiters: Array<() => void> = [];

  send(frame: Uint8Array): boolean {
    this.sent.push(decodeHostFrame(frame));
    return this.room;
  }

  sendParts(parts: readonly Uint8Array[]): boolean {
    return this.send(Buffer.concat(parts));
  }

  drained(): Promise<void> {
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  /** The buffer has room again. */
  drain(): void {
    this.room = true;
    for (const resolve of this.drainWaiters.splice(0)) resolve();
  }

  onFrame(handler: (frame: Uint8Array) => void): void {
    this.frameHandler = handler;
  }

  onClose(handler: (reason: FarmError | null) => void): void {
    this.closeHandler = handler;
  }

  end(): void {
    this.ended++;
  }

  abort(): void {
    this.aborted++;
    this.close(new FarmError("CANCELLED", "the session was dropped by this host"));
  }

  ending(): { reason: FarmError | null } | undefined {
    return this.trackerEnd;
  }

  /** The board says `frame`. */
  reply(frame: BoardFrame): void {
    this.frameHandler?.(encodeBoardFrame(frame));
  }

  /** Raw bytes from the board. */
  deliver(bytes: Uint8Array): void {
    this.frameHandler?.(bytes);
  }

  close(reason: FarmError | null): void {
    this.closeHandler?.(reason);
  }
}

/** Lets the multiplexer's awaited sends go out. */
function settled(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function setup(): { channel: MemoryChannel; mux: Multiplexer } {
  const channel = new MemoryChannel();
  return { channel, mux: new Multiplexer(channel, "s1") };
}

describe("Multiplexer: requests and replies", () => {
  it("gives each request the next id, from 1, and sends its op under it", async () => {
    const { channel, mux } = setup();
    void mux.request({ listdir: {} });
    void mux.request({ download: { name: "a" } });
    await settled();
    assert.deepEqual(
      channel.sent.map((f) => [f.id, f.op]),
      [
        [1, "listdir"],
        [2, "download"],
      ],
    );
    assert.equal(channel.sent[1]!.download?.name, "a");
  });

  it("matches replies to their requests by id, in whatever order they come", async () => {
    const { channel, mux } = setup();
    const first = mux.request({ listdir: {} });
    const second = mux.request({ listdir: {} });
    await settled();
    channel.reply({ id: 2, listing: { entries: [{ name: "two" }] } });
    channel.reply({ id: 1, listing: { entries: [{ name: "one" }] } });
    assert.equal((await first).listing?.entries[0]?.name, "one");
    assert.equal((await second).listing?.entries[0]?.name, "two");
  });

  it("an error reply fails its request with the board's FarmError, details kept; the others are untouched", async () => {
    const { channel, mux } = setup();
    const failing = mux.request({ download: { name: "missing" } });
    const other = mux.request({ listdir: {} });
    await settled();
    channel.reply({ id: 1, error: new FarmError("NOT_FOUND", "no file missing", { details: { name: "missing" } }).toWire() });
    await assert.rejects(failing, (e: FarmError) => e.code === "NOT_FOUND" && e.message === "no file missing" && e.details?.name === "missing");
    channel.reply({ id: 2, listing: { entries: [] } });
    assert.deepEqual((await other).listing?.entries, []);
  });

  it("a reply for an id nobody waits for is dropped, and the request still gets its own", async () => {
    const { channel, mux } = setup();
    const waiting = mux.request({ listdir: {} });
    await settled();
    channel.reply({ id: 99, listing: { entries: [{ name: "stray" }] } });
    channel.reply({ id: 1, listing: { entries: [{ name: "mine" }] } });
    // A second reply to an answered request is a stray too.
    channel.reply({ id: 1, listing: { entries: [{ name: "again" }] } });
    assert.equal((await waiting).listing?.entries[0]?.name, "mine");
    assert.equal(mux.endReason, undefined);
  });

  it("waits for the channel's drain when its buffer is full before waiting for the reply", async () => {
    const { channel, mux } = setup();
    channel.room = false;
    const waiting = mux.request({ listdir: {} });
    await settled();
    assert.equal(channel.sent.length, 1, "the frame went out; the buffer is full");
    channel.reply({ id: 1, listing: { entries: [] } });
    let done = false;
    void waiting.then(() => (done = true));
    await settled();
    assert.equal(done, false, "the reply waits for the drain");
    channel.drain();
    await waiting;
  });

  it("a close while it waits for the drain fails the request with the reason (a closed stream may never drain)", async () => {
    const { channel, mux } = setup();
    channel.room = false;
    const waiting = mux.request({ listdir: {} });
    await settled();
    channel.close(new FarmError("RUNTIME_CRASH", "the session worker died"));
    await assert.rejects(waiting, (e: FarmError) => e.code === "RUNTIME_CRASH");
  });
});

describe("Multiplexer: chunked replies (fetchChunked)", () => {
  it("assembles the data chunks of one id by offset, in any order, and resolves at the one marked done", async () => {
    const { channel, mux } = setup();
    const fetched = mux.fetchChunked({ download: { name: "f" } });
    assert.equal(channel.sent[0]?.id, 1);
    channel.reply({ id: 1, data: { data: Buffer.from("world"), offset: 6, total_bytes: 11, done: false } });
    channel.reply({ id: 1, data: { data: Buffer.from("hello "), offset: 0, total_bytes: 11, done: true } });
    assert.equal((await fetched).toString(), "hello world");
  });

  it("a reply that is not data resolves to no bytes; an error fails it", async () => {
    const { channel, mux } = setup();
    const empty = mux.fetchChunked({ download: { name: "f" } });
    const failing = mux.fetchChunked({ download: { name: "g" } });
    channel.reply({ id: 1, ok: {} });
    channel.reply({ id: 2, error: new FarmError("NOT_FOUND", "no file g").toWire() });
    assert.equal((await empty).length, 0);
    await assert.rejects(failing, (e: FarmError) => e.code === "NOT_FOUND");
  });
});

describe("Multiplexer: chunked sends (sendChunked)", () => {
  it("sends the bytes in CHUNK_BYTES pieces under one id, the last marked done, and resolves at the one reply", async () => {
    const { channel, mux } = setup();
    const bytes = Buffer.alloc(CHUNK_BYTES * 2 + 5, 7);
    const seen: Array<[number, number, boolean]> = [];
    const sent = mux.sendChunked(bytes, (chunk, offset, done) => {
      seen.push([chunk.byteLength, offset, done]);
      return { upload: { name: "big", data: chunk, total_bytes: bytes.byteLength, done } };
    });
    assert.deepEqual(seen, [
      [CHUNK_BYTES, 0, false],
      [CHUNK_BYTES, CHUNK_BYTES, false],
      [5, 2 * CHUNK_BYTES, true],
    ]);
    assert.deepEqual(
      channel.sent.map((f) => f.id),
      [1, 1, 1],
    );
    channel.reply({ id: 1, ok: {} });
    assert.equal((await sent).result, "ok");
  });

  it("a synchronous first piece goes out before the call returns, so that the next request follows it on the lane", () => {
    const { channel, mux } = setup();
    void mux.sendChunked(Buffer.from("small"), (chunk, _offset, done) => ({ upload: { name: "m", data: chunk, done } }));
    void mux.request({ listdir: {} });
    assert.deepEqual(
      channel.sent.map((f) => [f.id, f.op]),
      [
        [1, "upload"],
        [2, "listdir"],
      ],
    );
  });

  it("stops sending once the board answered (it refused the transfer)", async () => {
    const { channel, mux } = setup();
    channel.room = false;
    const bytes = Buffer.alloc(CHUNK_BYTES * 3);
    const sent = mux.sendChunked(bytes, (chunk, _offset, done) => ({ upload: { name: "big", data: chunk, done } }));
    assert.equal(channel.sent.length, 1, "the first piece filled the buffer: the next waits for the drain");
    channel.reply({ id: 1, error: new FarmError("TOO_LARGE", "over the session's quota").toWire() });
    await assert.rejects(sent, (e: FarmError) => e.code === "TOO_LARGE");
    await settled();
    assert.equal(channel.sent.length, 1, "nothing more was sent after the refusal");
  });

  it("stops before the next piece when the board answered while an asynchronous op was awaited", async () => {
    const { channel, mux } = setup();
    let calls = 0;
    const sent = mux.sendChunked(Buffer.alloc(CHUNK_BYTES * 2), async (chunk, _offset, done) => {
      if (calls++ === 1) channel.reply({ id: 1, error: new FarmError("TOO_LARGE", "over the session's quota").toWire() });
      await settled();
      return { upload: { name: "big", data: chunk, done } };
    });
    await assert.rejects(sent, (e: FarmError) => e.code === "TOO_LARGE");
    assert.equal(channel.sent.length, 1);
  });

  it("awaits an asynchronous op for each piece", async () => {
    const { channel, mux } = setup();
    const sent = mux.sendChunked(Buffer.from("abc"), async (chunk, _offset, done) => {
      await settled();
      return { upload: { name: "a", data: chunk, done } };
    });
    assert.equal(channel.sent.length, 0);
    await settled();
    await settled();
    assert.equal(channel.sent.length, 1);
    channel.reply({ id: 1, ok: {} });
    await sent;
  });
});

describe("Multiplexer: the end", () => {
  it("a clean close fails the waiting requests and every later one SESSION_CLOSED; `ended` resolves", async () => {
    const { channel, mux } = setup();
    const waiting = mux.request({ listdir: {} });
    channel.close(null);
    await mux.ended;
    await assert.rejects(waiting, (e: FarmError) => e.code === "SESSION_CLOSED" && e.message === "session s1 is closed");
    assert.equal(mux.endReason?.code, "SESSION_CLOSED");
    await assert.rejects(mux.fetchChunked({ download: { name: "f" } }), (e: FarmError) => e.code === "SESSION_CLOSED");
    await assert.rejects(mux.request({ listdir: {} }), (e: FarmError) => e.code === "SESSION_CLOSED" && e.message === "session s1 is closed");
    await assert.rejects(
      mux.sendChunked(Buffer.from("x"), () => ({ listdir: {} })),
      (e: FarmError) => e.code === "SESSION_CLOSED",
    );
    assert.equal(channel.sent.length, 1, "nothing is sent after the end");
  });

  it("an end with a reason fails the waiting requests with it, and every later one with its code and details, naming the session", async () => {
    const { channel, mux } = setup();
    const waiting = mux.request({ listdir: {} });
    const reason = new FarmError("DEVICE_ERROR", "the device context was lost", { details: { sticky: true } });
    channel.close(reason);
    await assert.rejects(waiting, (e: FarmError) => e === reason);
    await assert.rejects(
      mux.request({ listdir: {} }),
      (e: FarmError) => e.code === "DEVICE_ERROR" && e.message === "session s1 has ended: the device context was lost" && e.details?.sticky === true,
    );
  });

  it("only the first close counts", async () => {
    const { channel, mux } = setup();
    channel.close(new FarmError("RUNTIME_CRASH", "worker died"));
    channel.close(null);
    assert.equal(mux.endReason?.code, "RUNTIME_CRASH");
    await mux.ended;
  });

  it("while the lane drains after the tracker's end, new requests are refused with it; the waiting ones still get their replies", async () => {
    const { channel, mux } = setup();
    const waiting = mux.request({ listdir: {} });
    await settled();
    channel.trackerEnd = { reason: new FarmError("AGENT_LOST", "board b1 was lost") };
    assert.equal(mux.endReason?.code, "AGENT_LOST");
    await assert.rejects(mux.request({ listdir: {} }), (e: FarmError) => e.code === "AGENT_LOST" && e.message === "session s1 has ended: board b1 was lost");
    channel.reply({ id: 1, listing: { entries: [] } });
    assert.deepEqual((await waiting).listing?.entries, []);
  });

  it("a clean tracker's end while draining refuses new requests SESSION_CLOSED", async () => {
    const { channel, mux } = setup();
    channel.trackerEnd = { reason: null };
    assert.equal(mux.endReason?.code, "SESSION_CLOSED");
    await assert.rejects(mux.request({ listdir: {} }), (e: FarmError) => e.code === "SESSION_CLOSED");
  });

  it("an undecodable frame from the board ends the session PROTOCOL_ERROR and drops the channel", async () => {
    const { channel, mux } = setup();
    const waiting = mux.request({ listdir: {} });
    channel.deliver(Buffer.from([0xff, 0xff, 0xff]));
    await assert.rejects(waiting, (e: FarmError) => e.code === "PROTOCOL_ERROR" && e.message.startsWith("the board sent an undecodable frame"));
    assert.equal(channel.aborted, 1);
    assert.equal(mux.endReason?.code, "PROTOCOL_ERROR", "the channel's own close after the abort does not replace the reason");
  });

  it("end() ends the host's side of the channel", () => {
    const { channel, mux } = setup();
    mux.end();
    assert.equal(channel.ended, 1);
  });
});
