/** The dedupe plan: ask first until the lane and the hash are known, then send at once where the lane outruns the hash; what a session placed. */
import assert from "node:assert/strict";
import { beforeEach, describe, it } from "node:test";
import { RATE_MIN_BYTES, SessionUploads, dedupePlan, noteHash, noteTransfer, resetDedupeRates } from "./dedupe-plan.ts";

const MiB = 1 << 20;

describe("dedupePlan", () => {
  beforeEach(resetDedupeRates);

  it("asks first while either rate is unknown, and ignores uploads too small to tell", () => {
    assert.equal(dedupePlan("b|direct", 64 * MiB), "probe");
    noteTransfer("b|direct", 64 * MiB, 20);
    assert.equal(dedupePlan("b|direct", 64 * MiB), "probe", "no hash rate yet");
    noteHash("b|direct", RATE_MIN_BYTES - 1, 0.001);
    assert.equal(dedupePlan("b|direct", 64 * MiB), "probe", "a small hash says nothing");
  });

  it("sends at once where the lane carries the bytes faster than they hash, asks first where it is slower", () => {
    noteHash("fast|direct", 64 * MiB, 20);
    noteTransfer("fast|direct", 64 * MiB, 10);
    assert.equal(dedupePlan("fast|direct", 64 * MiB), "send");
    noteHash("slow|relay", 64 * MiB, 20);
    noteTransfer("slow|relay", 64 * MiB, 500);
    assert.equal(dedupePlan("slow|relay", 64 * MiB), "probe");
    assert.equal(dedupePlan("other|direct", 64 * MiB), "probe", "per board and lane");
  });

  it("follows a lane that changes: each measurement weighs half", () => {
    noteHash("b|relay", 64 * MiB, 20);
    noteTransfer("b|relay", 64 * MiB, 10);
    assert.equal(dedupePlan("b|relay", 64 * MiB), "send");
    for (let i = 0; i < 3; i++) noteTransfer("b|relay", 64 * MiB, 400);
    assert.equal(dedupePlan("b|relay", 64 * MiB), "probe");
  });
});

describe("SessionUploads", () => {
  it("holds the digests a session placed, and the sizes that may be them again", () => {
    const uploads = new SessionUploads();
    assert.equal(uploads.holds("tree-ab"), false);
    assert.equal(uploads.mayHold(3 * MiB), false);
    uploads.placed("tree-ab", 3 * MiB);
    uploads.placed("cd", 100);
    assert.equal(uploads.holds("tree-ab"), true);
    assert.equal(uploads.holds("ab"), false, "a tree digest and a sha256 are told apart");
    assert.equal(uploads.holds("cd"), true);
    assert.equal(uploads.mayHold(3 * MiB), true);
    assert.equal(uploads.mayHold(3 * MiB + 1), false);
  });
});
