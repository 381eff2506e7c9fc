/** SessionOutput: the last bytes a session's worker printed, read back in pieces by position. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { SESSION_OUTPUT_BYTES, SessionOutput } from "./session-output.ts";

/** Everything from `from` on, read in pieces of `max` as a worker pages through it. */
function readAll(o: SessionOutput, from = 0, max = 7): { start: number; text: string } {
  const first = o.read(from, max);
  const parts = [first.data];
  let at = first.start + first.data.byteLength;
  while (at < first.end) {
    const r = o.read(at, max);
    parts.push(r.data);
    at = r.start + r.data.byteLength;
  }
  return { start: first.start, text: Buffer.concat(parts).toString() };
}

describe("a session's output", () => {
  it("holds what was printed, in order, with positions from the session's first byte", () => {
    const o = new SessionOutput(16);
    assert.deepEqual([o.start, o.end], [0, 0]);
    assert.deepEqual(o.read(0, 100), { start: 0, data: Buffer.alloc(0), end: 0 });
    o.append(Buffer.from("hello "));
    o.append(Buffer.from("world"));
    assert.deepEqual(readAll(o), { start: 0, text: "hello world" });
    assert.deepEqual(o.read(6, 3), { start: 6, data: Buffer.from("wor"), end: 11 });
    assert.deepEqual(o.read(11, 3), { start: 11, data: Buffer.alloc(0), end: 11 });
    assert.deepEqual(o.read(50, 3), { start: 11, data: Buffer.alloc(0), end: 11 }, "a position past the end reads nothing");
  });

  it("keeps the last `capacity` bytes: a read from before them starts at the first one held", () => {
    const o = new SessionOutput(8);
    o.append(Buffer.from("0123456789"));
    assert.deepEqual([o.start, o.end], [2, 10]);
    assert.deepEqual(readAll(o), { start: 2, text: "23456789" });
    o.append(Buffer.from("ab"));
    assert.deepEqual(readAll(o, 0, 3), { start: 4, text: "456789ab" }, "wrapped around the buffer's end");
    o.append(Buffer.from("x".repeat(20) + "tail"));
    assert.deepEqual(readAll(o), { start: 28, text: "xxxxtail" }, "a piece larger than the capacity keeps its end");
  });

  it("takes no memory until something is printed, and never more than its capacity", () => {
    const o = new SessionOutput();
    assert.equal(o.capacity, SESSION_OUTPUT_BYTES);
    assert.equal((o as unknown as { buf: Buffer }).buf.length, 0);
    o.append(Buffer.alloc(10));
    assert.ok((o as unknown as { buf: Buffer }).buf.length <= 4096);
    for (let i = 0; i < 40; i++) o.append(Buffer.alloc(100_000, i));
    assert.equal((o as unknown as { buf: Buffer }).buf.length, SESSION_OUTPUT_BYTES);
    assert.equal(o.end, 10 + 40 * 100_000);
    const last = o.read(o.end - 1, 1);
    assert.deepEqual([...last.data], [39]);
  });

  it("reads the same as a plain string of everything printed, cut to its last `capacity` bytes", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 64 }), fc.array(fc.string({ maxLength: 40 })), fc.integer({ min: 1, max: 50 }), (capacity, pieces, max) => {
        const o = new SessionOutput(capacity);
        let all = Buffer.alloc(0);
        for (const p of pieces) {
          o.append(Buffer.from(p));
          all = Buffer.concat([all, Buffer.from(p)]);
        }
        const kept = all.subarray(Math.max(0, all.length - capacity));
        const got = readAll(o, 0, max);
        assert.equal(o.end, all.length);
        assert.equal(got.start, all.length - kept.length);
        assert.equal(got.text, kept.toString());
      }),
    );
  });
});
