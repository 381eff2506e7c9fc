import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { MAX_FRAME_BYTES, MAX_JSON_DEPTH, TRACKER_MAGIC, WireReader, encodeFrame, int32, nestsDeeperThan } from "./wire.ts";

/** The nesting JSON.parse finds, for the property below. */
function depthOf(v: unknown): number {
  if (Array.isArray(v)) return 1 + Math.max(0, ...v.map(depthOf));
  if (v !== null && typeof v === "object") return 1 + Math.max(0, ...Object.values(v).map(depthOf));
  return 0;
}

describe("TVM tracker wire codec", () => {
  it("encodes a frame as an int32 LE length and its JSON, in one buffer", () => {
    const f = encodeFrame([0, ["127.0.0.1", 9090, "k:0.5"]]);
    const json = '[0,["127.0.0.1",9090,"k:0.5"]]';
    assert.equal(f.readInt32LE(0), json.length);
    assert.equal(f.subarray(4).toString(), json);
  });

  it("reads the handshake, then frames split anywhere across chunks", () => {
    const r = new WireReader();
    const bytes = Buffer.concat([int32(TRACKER_MAGIC), encodeFrame([1]), encodeFrame([4, "key", "", 2])]);
    const events = [];
    for (let i = 0; i < bytes.length; i += 3) events.push(...r.push(bytes.subarray(i, i + 3)));
    assert.deepEqual(events, [{ type: "hello" }, { type: "frame", value: [1] }, { type: "frame", value: [4, "key", "", 2] }]);
    assert.equal(r.pendingBytes, 0);
  });

  it("a wrong magic and a length outside 1…MAX_FRAME_BYTES are PROTOCOL_ERRORs", () => {
    assert.throws(() => new WireReader().push(int32(0xff271)), { code: "PROTOCOL_ERROR", message: /0xff271 where TVM's tracker magic 0x2f271 belongs/ });
    for (const n of [0, -1, MAX_FRAME_BYTES + 1]) {
      const r = new WireReader();
      r.push(int32(TRACKER_MAGIC));
      assert.throws(() => r.push(int32(n)), { code: "PROTOCOL_ERROR", message: new RegExp(`a frame of ${n} bytes`) });
    }
  });

  it("a frame that is not UTF-8 JSON is reported, and the next frame is read", () => {
    const r = new WireReader();
    const events = r.push(Buffer.concat([int32(TRACKER_MAGIC), int32(3), Buffer.from("{x}"), int32(2), Buffer.from([0xc3, 0x28]), encodeFrame([6])]));
    assert.equal(events.length, 4);
    assert.equal(events[1]!.type === "frame" && events[1]!.error?.code, "INVALID_ARGUMENT");
    assert.equal(events[2]!.type === "frame" && events[2]!.error?.code, "INVALID_ARGUMENT");
    assert.deepEqual(events[3], { type: "frame", value: [6] });
  });

  it("nestsDeeperThan counts brackets outside strings, escapes included, as JSON.parse nests", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), fc.integer({ min: 0, max: 8 }), (v, max) => {
        const text = Buffer.from(JSON.stringify(v), "utf8");
        assert.equal(nestsDeeperThan(text, max), depthOf(v) > max);
      }),
      { numRuns: 2000 },
    );
    assert.equal(nestsDeeperThan(Buffer.from(JSON.stringify(['[[[[\\"[[[[', { "{{": "}\\" }])), 2), false);
  });

  it("a frame nested past MAX_JSON_DEPTH is a PROTOCOL_ERROR before it is parsed", () => {
    const r = new WireReader();
    r.push(int32(TRACKER_MAGIC));
    const deep = Buffer.from(`${"[".repeat(MAX_JSON_DEPTH + 1)}${"]".repeat(MAX_JSON_DEPTH + 1)}`);
    assert.throws(() => r.push(Buffer.concat([int32(deep.length), deep])), { code: "PROTOCOL_ERROR", message: /nests arrays and objects more than 16 deep/ });
  });
});
