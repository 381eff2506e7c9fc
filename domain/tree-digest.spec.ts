/** The tree digest: its definition written out, its edges (empty, a whole leaf, a leaf and a byte), and a file's equal to its bytes'. */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { TREE_LEAF_BYTES, treeDigest, treeDigestOfFile } from "./tree-digest.ts";

const sha = (...parts: Uint8Array[]) => {
  const h = createHash("sha256");
  for (const p of parts) h.update(p);
  return h.digest();
};

/** The definition, spelled out with one sequential hash per leaf. */
function byHand(bytes: Uint8Array): string {
  const size = Buffer.alloc(8);
  size.writeBigUInt64LE(BigInt(bytes.byteLength));
  const leaves: Uint8Array[] = [];
  for (let at = 0; at < bytes.byteLength; at += TREE_LEAF_BYTES) leaves.push(sha(bytes.subarray(at, at + TREE_LEAF_BYTES)));
  return sha(Buffer.from("kfarm-tree-sha256-v1\0"), size, ...leaves).toString("hex");
}

describe("tree digest", () => {
  const sizes = [0, 1, TREE_LEAF_BYTES - 1, TREE_LEAF_BYTES, TREE_LEAF_BYTES + 1, 3 * TREE_LEAF_BYTES + 777];

  it("is sha256 over a tag, the size and the leaves' sha256s, for sizes at and around a leaf", async () => {
    for (const n of sizes) {
      const bytes = Uint8Array.from({ length: n }, (_, i) => (i * 131 + 7) & 0xff);
      assert.equal(await treeDigest(bytes), byHand(bytes), `${n} bytes`);
    }
    // Pinned: the Python SDK's tree digest (python/tests/test_tree_digest.py) is checked against the same values.
    assert.equal(await treeDigest(new Uint8Array(0)), "baafd6012f33e25a690f26b9a8859517f8f99a5f4eb6ee1c9d11d09450e5c716");
    const pattern = Uint8Array.from({ length: 3 * TREE_LEAF_BYTES + 777 }, (_, i) => (i * 131 + 7) & 0xff);
    assert.equal(await treeDigest(pattern), "47795da2b80146eebcb997741670ea008bcb922ad639d13853c65587cf2602c7");
  });

  it("tells apart bytes that share their leaves but not their length, and differs from the plain sha256", async () => {
    const a = new Uint8Array(TREE_LEAF_BYTES);
    assert.notEqual(await treeDigest(a), await treeDigest(a.subarray(0, TREE_LEAF_BYTES - 1)));
    assert.notEqual(await treeDigest(a), sha(a).toString("hex"));
  });

  it("of a file equals that of its bytes", async () => {
    const dir = mkdtempSync(join(tmpdir(), "kfarm-tree-"));
    try {
      for (const n of sizes) {
        const bytes = Uint8Array.from({ length: n }, (_, i) => (i * 7 + n) & 0xff);
        writeFileSync(join(dir, "f"), bytes);
        assert.equal(await treeDigestOfFile(join(dir, "f")), await treeDigest(bytes), `${n} bytes`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
