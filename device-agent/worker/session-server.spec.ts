/**
 * The session's multiplexer (session-server.ts), without a process: frames go
 * in through `receive`, replies come out of a FrameSink the spec holds, the
 * board is a real CPU backend (nothing native is loaded) and the session's
 * folder a temporary one. What it promises: every request gets its reply (or
 * replies) with its id, an error included; frames are handled strictly in
 * order; chunked requests are assembled, and refused once; big replies go in
 * chunks, waiting for the sink; the lane stops reading when frames pile up;
 * tenant code runs only after earlier answers have left; after Close every
 * request is refused.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, it } from "node:test";
import { CHUNK_BYTES, decodeBoardFrame, encodeHostFrame, type BoardFrame__Output, type HostFrame } from "../../protos/index.ts";
import { CpuBackend } from "../backends/cpu.ts";
import { RequestCounters } from "../common/request-counters.ts";
import { SessionServer, type FrameSink } from "./session-server.ts";

/** Where the server's replies go: decoded, in order; `full` makes sends say "wait", `flushing` holds tenant code back. */
class Sink implements FrameSink {
  readonly frames: BoardFrame__Output[] = [];
  full = false;
  pauses = 0;
  resumes = 0;
  /** How many frames had been sent when each drained() was asked for. */
  readonly drainAsked: number[] = [];
  flushing: Promise<void> | undefined;
  private drain: (() => void) | undefined;
  private readonly waiters: Array<{ n: number; resolve: () => void }> = [];

  constructor(private readonly parts: boolean) {
    if (!parts) this.sendParts = undefined;
  }

  send(frame: Uint8Array): boolean {
    this.frames.push(decodeBoardFrame(frame));
    for (const w of this.waiters.filter((x) => this.frames.length >= x.n)) w.resolve();
    return !this.full;
  }

  sendParts?: (parts: readonly Uint8Array[]) => boolean = (parts) => this.send(Buffer.concat(parts));

  pause(): void {
    this.pauses++;
  }

  resume(): void {
    this.resumes++;
  }

  drained(): Promise<void> {
    this.drainAsked.push(this.frames.length);
    return new Promise((resolve) => (this.drain = resolve));
  }

  /** Lets the server go on after a `false` from send. */
  release(): void {
    this.full = false;
    this.drain?.();
  }

  flushed(): Promise<void> | undefined {
    return this.flushing;
  }

  /** Resolves once `n` replies have come. */
  replies(n: number): Promise<BoardFrame__Output[]> {
    if (this.frames.length >= n) return Promise.resolve(this.frames.slice(0, n));
    return new Promise((resolve) => this.waiters.push({ n, resolve: () => resolve(this.frames.slice(0, n)) }));
  }
}

let dir: string;
let sink: Sink;
let counters: RequestCounters;
let server: SessionServer;

function start(parts = true): void {
  sink = new Sink(parts);
  counters = new RequestCounters();
  server = new SessionServer(new CpuBackend({ memoryBytes: 1 << 20 }), dir, { maxUploadBytes: 8 << 20, maxSessionBytes: 16 << 20, callTimeoutMs: 1000 }, sink, {
    counters,
  });
}

function send(frame: HostFrame): void {
  server.receive(encodeHostFrame(frame));
}

/** An upload of `bytes` as `name`, in frames of at most `chunk` bytes, under `id`. */
function upload(id: number, name: string, bytes: Buffer, chunk = bytes.length || 1): void {
  let offset = 0;
  do {
    const data = bytes.subarray(offset, offset + chunk);
    offset += data.length;
    send({ id, upload: { name, total_bytes: bytes.length, data, done: offset >= bytes.length } });
  } while (offset < bytes.length);
}

const errorOf = (f: BoardFrame__Output | undefined) => f && { id: f.id, code: f.error?.code, message: f.error?.message };

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "kfarm-session-server-"));
  start();
});

afterEach(() => {
  server.dispose();
  rmSync(dir, { recursive: true, force: true });
});

describe("SessionServer: replies and their ids", () => {
  it("answers each request with its id, in the order the frames came", async () => {
    upload(5, "a.txt", Buffer.from("hello"));
    send({ id: 6, listdir: {} });
    send({ id: 7, download: { name: "a.txt" } });
    send({ id: 8, remove: { name: "a.txt" } });
    send({ id: 9, listdir: {} });
    const [up, list, down, rm, after] = await sink.replies(5);
    assert.deepEqual([up?.id, up?.result], [5, "ok"]);
    assert.deepEqual([list?.id, list?.listing?.entries.map((e) => [e.name, Number(e.size)])], [6, [["a.txt", 5]]]);
    assert.deepEqual([down?.id, Buffer.from(down!.data!.data).toString(), down?.data?.done], [7, "hello", true]);
    assert.deepEqual([rm?.id, rm?.result], [8, "ok"]);
    assert.deepEqual([after?.id, after?.listing?.entries], [9, []]);
  });

  it("an operation's error is the reply to its request, under its id", async () => {
    send({ id: 3, download: { name: "missing.bin" } });
    send({ id: 4, call: { module: 1, function: "f", args: [] } });
    const [missing, call] = await sink.replies(2);
    assert.deepEqual([missing?.id, missing?.error?.code], [3, "NOT_FOUND"]);
    assert.doesNotMatch(missing!.error!.message, new RegExp(dir), "no path of the agent's");
    assert.deepEqual(errorOf(call), { id: 4, code: "NOT_FOUND", message: "no module 1 in this session; load one with loadModule" });
    assert.equal(counters.calls, 1);
    assert.deepEqual(counters.take()?.errors, { NOT_FOUND: 1 }, "a failed call is counted by its code");
  });

  it("bytes that do not decode get a PROTOCOL_ERROR under id 0, and the session goes on", async () => {
    // Field 2 (upload), 5 bytes announced, 1 there.
    server.receive(Uint8Array.from([0x12, 0x05, 0x01]));
    send({ id: 1, listdir: {} });
    const [bad, list] = await sink.replies(2);
    assert.equal(bad?.id, 0);
    assert.equal(bad?.error?.code, "PROTOCOL_ERROR");
    assert.match(bad!.error!.message, /^undecodable frame: /);
    assert.equal(list?.id, 1);
  });

  it("a frame without an operation it knows (none, or a newer host's) is refused under its id", async () => {
    send({ id: 9 });
    // id 10, then field 99 (varint 1): an operation this board's protos do not have.
    server.receive(Uint8Array.from([0x08, 10, 0x98, 0x06, 0x01]));
    const replies = await sink.replies(2);
    assert.deepEqual(replies.map(errorOf), [
      { id: 9, code: "PROTOCOL_ERROR", message: "frame 9 carries no known operation" },
      { id: 10, code: "PROTOCOL_ERROR", message: "frame 10 carries no known operation" },
    ]);
  });
});

describe("SessionServer: chunked requests", () => {
  it("assembles an upload's frames under one id and replies once, after the last", async () => {
    upload(3, "big.bin", Buffer.from("abcdefgh"), 3);
    send({ id: 4, download: { name: "big.bin" } });
    const [up, down] = await sink.replies(2);
    assert.deepEqual([up?.id, up?.result], [3, "ok"]);
    assert.equal(Buffer.from(down!.data!.data).toString(), "abcdefgh");
    assert.equal(sink.frames.length, 2, "one reply per request");
  });

  it("a chunked request that fails is refused once; its later frames are swallowed; its id is free after its last", async () => {
    // Announced past the upload limit: refused at its first frame.
    send({ id: 3, upload: { name: "x.bin", total_bytes: 9 << 20, data: Buffer.from("a"), done: false } });
    send({ id: 3, upload: { name: "x.bin", total_bytes: 9 << 20, data: Buffer.from("b"), done: false } });
    send({ id: 3, upload: { name: "x.bin", total_bytes: 9 << 20, data: Buffer.from("c"), done: true } });
    upload(3, "y.bin", Buffer.from("ok"));
    const [refused, ok] = await sink.replies(2);
    assert.deepEqual([refused?.id, refused?.error?.code], [3, "TOO_LARGE"]);
    assert.deepEqual([ok?.id, ok?.result], [3, "ok"]);
    assert.equal(sink.frames.length, 2);
  });

  it("a frame of another kind of request under a chunked request's id is a PROTOCOL_ERROR; the request goes on", async () => {
    send({ id: 4, upload: { name: "m.bin", total_bytes: 4, data: Buffer.from("ab"), done: false } });
    send({ id: 4, array_write: { array: 1, offset: 0, data: Buffer.from("zz"), done: true } });
    send({ id: 4, upload: { name: "m.bin", total_bytes: 4, data: Buffer.from("cd"), done: true } });
    const [mixed, done] = await sink.replies(2);
    assert.deepEqual(errorOf(mixed), { id: 4, code: "PROTOCOL_ERROR", message: "frame 4 mixes an array write into another request" });
    assert.deepEqual([done?.id, done?.result], [4, "ok"]);
  });

  it("dispose() lets go of an upload that never got its last frame (its file goes)", async () => {
    send({ id: 2, upload: { name: "half.bin", total_bytes: 4, data: Buffer.from("ab"), done: false } });
    send({ id: 3, listdir: {} });
    await sink.replies(1);
    assert.ok(existsSync(join(dir, "half.bin")));
    server.dispose();
    assert.ok(!existsSync(join(dir, "half.bin")));
  });
});

describe("SessionServer: big replies", () => {
  for (const parts of [true, false]) {
    it(`sends a download past CHUNK_BYTES as Data frames of at most CHUNK_BYTES, the last one done (${parts ? "as parts" : "as frames"})`, async () => {
      start(parts);
      const bytes = Buffer.alloc(2 * CHUNK_BYTES + 5, 7);
      upload(1, "f.bin", bytes, CHUNK_BYTES);
      send({ id: 2, download: { name: "f.bin" } });
      const [, ...data] = await sink.replies(4);
      assert.deepEqual(
        data.map((f) => [f.id, Number(f.data!.offset), f.data!.data.length, Number(f.data!.total_bytes), f.data!.done]),
        [
          [2, 0, CHUNK_BYTES, bytes.length, false],
          [2, CHUNK_BYTES, CHUNK_BYTES, bytes.length, false],
          [2, 2 * CHUNK_BYTES, 5, bytes.length, true],
        ],
      );
    });
  }

  it("an empty file is one Data frame, done", async () => {
    upload(1, "empty", Buffer.alloc(0));
    send({ id: 2, download: { name: "empty" } });
    const [, data] = await sink.replies(2);
    assert.deepEqual([data?.id, data?.data?.data.length, Number(data?.data?.total_bytes), data?.data?.done], [2, 0, 0, true]);
  });

  it("waits for the sink to drain before the next chunk, and handles the next request only after the last", async () => {
    upload(1, "f.bin", Buffer.alloc(CHUNK_BYTES + 1, 1), CHUNK_BYTES);
    await sink.replies(1);
    sink.full = true;
    send({ id: 2, download: { name: "f.bin" } });
    send({ id: 3, listdir: {} });
    await sink.replies(2);
    assert.deepEqual(sink.drainAsked, [2], "asked to wait right after the first chunk");
    assert.equal(sink.frames.length, 2, "nothing more until it drains");
    sink.release();
    const replies = await sink.replies(4);
    assert.deepEqual(
      replies.slice(2).map((f) => [f.id, f.result]),
      [
        [2, "data"],
        [3, "listing"],
      ],
    );
  });
});

describe("SessionServer: flow and tenant code", () => {
  it("tenant code waits until earlier answers have left; other requests do not wait", async () => {
    let flush!: () => void;
    sink.flushing = new Promise((resolve) => (flush = resolve));
    send({ id: 1, listdir: {} });
    await sink.replies(1);
    send({ id: 2, call: { module: 1, function: "f", args: [] } });
    send({ id: 3, listdir: {} });
    await Promise.resolve();
    assert.equal(sink.frames.length, 1, "the call waits for the flush, and the listdir after it waits its turn");
    flush();
    const replies = await sink.replies(3);
    assert.deepEqual(
      replies.map((f) => f.id),
      [1, 2, 3],
    );
  });

  it("stops the lane's reading when frames pile up, and goes on when half have been handled", async () => {
    let flush!: () => void;
    sink.flushing = new Promise((resolve) => (flush = resolve));
    send({ id: 1, call: { module: 1, function: "f", args: [] } });
    for (let id = 2; id <= 8; id++) send({ id, listdir: {} });
    assert.equal(sink.pauses, 0, "7 frames queued");
    send({ id: 9, listdir: {} });
    assert.equal(sink.pauses, 1, "the 8th pauses the lane");
    send({ id: 10, listdir: {} });
    assert.equal(sink.pauses, 1, "once");
    flush();
    const replies = await sink.replies(10);
    assert.equal(sink.resumes, 1);
    assert.deepEqual(
      replies.map((f) => f.id),
      [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
    );
  });
});

describe("SessionServer: Close", () => {
  it("answers Close, resolves `closed`, and refuses every later request SESSION_CLOSED (calls still counted)", async () => {
    send({ id: 1, close: {} });
    await server.closed;
    send({ id: 2, listdir: {} });
    send({ id: 3, call: { module: 1, function: "f", args: [] } });
    const [closed, list, call] = await sink.replies(3);
    assert.deepEqual([closed?.id, closed?.result], [1, "ok"]);
    assert.deepEqual(errorOf(list), { id: 2, code: "SESSION_CLOSED", message: "the session is closing" });
    assert.deepEqual(errorOf(call), { id: 3, code: "SESSION_CLOSED", message: "the session is closing" });
    assert.deepEqual(counters.take(), { calls: 1, timeEvaluations: 0, errors: { SESSION_CLOSED: 1 } });
  });
});
