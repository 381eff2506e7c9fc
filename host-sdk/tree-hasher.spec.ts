/** The worker-thread tree digest equals the definition's, at and around its threshold, for odd sizes, and under concurrent calls. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { TREE_LEAF_BYTES, treeDigest } from "../domain/index.ts";
import { PARALLEL_TREE_MIN_BYTES, hashTree } from "./tree-hasher.ts";

describe("hashTree", () => {
  const bytes = Uint8Array.from({ length: PARALLEL_TREE_MIN_BYTES + 3 * TREE_LEAF_BYTES + 17 }, (_, i) => (i * 31 + (i >> 20)) & 0xff);

  it("equals treeDigest below, at and above the size where threads take over", async () => {
    for (const n of [PARALLEL_TREE_MIN_BYTES - 1, PARALLEL_TREE_MIN_BYTES, PARALLEL_TREE_MIN_BYTES + 1, bytes.length]) {
      assert.equal(await hashTree(bytes.subarray(0, n)), await treeDigest(bytes.subarray(0, n)), `${n} bytes`);
    }
  });

  it("gives each of several concurrent calls its own digest (they share one buffer, one at a time)", async () => {
    const a = bytes.subarray(0, PARALLEL_TREE_MIN_BYTES + 5);
    const b = Uint8Array.from(a, (x) => x ^ 0x5a);
    const [da, db, da2] = await Promise.all([hashTree(a), hashTree(b), hashTree(a)]);
    assert.equal(da, await treeDigest(a));
    assert.equal(db, await treeDigest(b));
    assert.equal(da2, da);
    assert.notEqual(da, db);
  });
});
