/**
 * runtime/lane.ts: frames over a socket that reads into its own buffers
 * (LaneReads, the host's plaintext lanes), against one that reads by 'data'
 * events, on a loopback socket of this process.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { connect, createServer, type Server, type Socket } from "node:net";
import { afterEach, beforeEach, describe, it } from "node:test";
import { FarmError } from "../protos/index.ts";
import { LaneReads, LaneSocket, framed } from "./lane.ts";

/** Bytes `seed`, `seed + 1`, … of `n`. */
function pattern(n: number, seed: number): Buffer {
  const b = Buffer.allocUnsafe(n);
  for (let i = 0; i < n; i++) b[i] = (seed + i * 31) & 0xff;
  return b;
}

describe("LaneSocket reading through LaneReads", () => {
  let server: Server;
  let peer: Promise<Socket>;
  beforeEach(async () => {
    server = createServer();
    peer = once(server, "connection").then(([s]) => s as Socket);
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
  });
  afterEach(() => server.close());

  async function open(withReads: boolean, limit?: number): Promise<{ lane: LaneSocket; other: Socket; frames: Buffer[] }> {
    const reads = withReads ? new LaneReads() : undefined;
    const { port } = server.address() as { port: number };
    const socket = connect({ port, host: "127.0.0.1", ...(reads ? { onread: reads.onread } : {}) });
    await once(socket, "connect");
    const other = await peer;
    const lane = new LaneSocket(socket, "the test lane", limit, reads);
    const frames: Buffer[] = [];
    lane.onFrame((f) => frames.push(Buffer.from(f)));
    return { lane, other, frames };
  }

  for (const withReads of [true, false]) {
    it(`delivers small and large frames whole and in order, whatever the pieces they arrive in (${withReads ? "LaneReads" : "'data' events"})`, async () => {
      const { lane, other, frames } = await open(withReads);
      const sent = [pattern(10, 1), pattern(3 << 20, 2), pattern(0, 0), pattern(70_000, 3), pattern(1 << 20, 4), pattern(5, 5)];
      const wire = Buffer.concat(sent.map((f) => framed(f)));
      // Pieces cut across headers and frames: 3 bytes, then odd sizes.
      for (let at = 0, step = 3; at < wire.length; at += step, step = step * 7 + 1) {
        other.write(wire.subarray(at, Math.min(wire.length, at + step)));
      }
      other.end();
      await new Promise<void>((resolve) => lane.onClose(() => resolve()));
      assert.equal(frames.length, sent.length);
      frames.forEach((f, i) => assert.ok(f.equals(sent[i]!), `frame ${i} (${sent[i]!.length} bytes) as sent`));
    });
  }

  it("refuses a frame over its limit from its header, before reading it", async () => {
    const { lane, other, frames } = await open(true, 1 << 20);
    const closed = new Promise<FarmError | null>((resolve) => lane.onClose(resolve));
    const header = Buffer.alloc(4);
    header.writeUInt32BE((1 << 20) + 1);
    other.write(Buffer.concat([framed(pattern(100, 1)), header, pattern(1000, 2)]));
    const err = await closed;
    assert.ok(err instanceof FarmError && err.code === "PROTOCOL_ERROR", String(err));
    assert.match(err.message, /a frame of 1048577 bytes is over the limit of 1048576/);
    assert.equal(frames.length, 1);
  });

  it("keeps what the socket read before the lane took it over", async () => {
    const reads = new LaneReads();
    const { port } = server.address() as { port: number };
    let firstRead!: () => void;
    const read = new Promise<void>((resolve) => (firstRead = resolve));
    const socket = connect({
      port,
      host: "127.0.0.1",
      onread: { buffer: reads.onread.buffer, callback: (n, buf) => (firstRead(), reads.onread.callback(n, buf)) },
    });
    const other = await peer;
    const big = pattern(200_000, 9);
    other.write(Buffer.concat([framed(pattern(7, 1)), framed(big)]));
    // Read, not yet taken: what came waits in `reads`.
    await read;
    const lane = new LaneSocket(socket, "the test lane", undefined, reads);
    const frames: Buffer[] = [];
    const got = new Promise<void>((resolve) =>
      lane.onFrame((f) => {
        frames.push(Buffer.from(f));
        if (frames.length === 2) resolve();
      }),
    );
    await got;
    assert.ok(frames[0]!.equals(pattern(7, 1)));
    assert.ok(frames[1]!.equals(big));
    socket.destroy();
    other.destroy();
  });
});
