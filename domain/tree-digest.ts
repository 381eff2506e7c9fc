/**
 * The tree digest of a file: what `upload(…, { dedupe: true })` names bytes
 * by. A plain sha256 is one sequential pass (64 MiB: ~60 ms on one core of
 * the GPU host, as long as the transfer it would save); the tree digest
 * hashes each 1 MiB leaf on its own, on the thread pool (WebCrypto's digest
 * runs there), so a host with cores to spare hashes a file in a fraction of
 * that. Then one sha256 over the leaves' digests makes the file's:
 *
 *   sha256("kfarm-tree-sha256-v1" 0x00 ‖ size as 8 bytes little-endian ‖ sha256(leaf 0) ‖ sha256(leaf 1) ‖ …)
 *
 * Leaves are whole MiB but the last, which may be short (or absent for an
 * empty file). The size is in the root so that no two lengths share leaves.
 */
import { createHash } from "node:crypto";
import { open } from "node:fs/promises";
import { TREE_LEAF_BYTES } from "../protos/gen/contract.ts";

/** Declared for both SDKs in contract.json. */
export { TREE_LEAF_BYTES };
const TAG = Buffer.from("kfarm-tree-sha256-v1\0");

/** The digest of a file of `size` bytes from its leaves' sha256 digests, in order. */
export function treeRoot(size: number, leaves: readonly Uint8Array[]): string {
  const header = Buffer.alloc(8);
  header.writeBigUInt64LE(BigInt(size));
  const root = createHash("sha256").update(TAG).update(header);
  for (const leaf of leaves) root.update(leaf);
  return root.digest("hex");
}

/** The tree digest of `bytes`, its leaves hashed concurrently on the thread pool. */
export async function treeDigest(bytes: Uint8Array): Promise<string> {
  const leaves: Promise<ArrayBuffer>[] = [];
  for (let at = 0; at < bytes.byteLength; at += TREE_LEAF_BYTES) {
    leaves.push(crypto.subtle.digest("SHA-256", bytes.subarray(at, Math.min(at + TREE_LEAF_BYTES, bytes.byteLength))));
  }
  return treeRoot(
    bytes.byteLength,
    (await Promise.all(leaves)).map((d) => new Uint8Array(d)),
  );
}

/**
 * The tree digest of the file at `path`, read a leaf at a time and hashed as
 * each arrives, one leaf on the thread pool at a time: the agent checks its
 * store in the background, and must leave the pool to the sessions' file
 * operations (a hand-out queued behind 64 leaves waited tens of ms).
 */
export async function treeDigestOfFile(path: string): Promise<string> {
  const fh = await open(path, "r");
  try {
    const leaves: ArrayBuffer[] = [];
    let size = 0;
    for (;;) {
      const leaf = Buffer.allocUnsafe(TREE_LEAF_BYTES);
      let got = 0;
      while (got < TREE_LEAF_BYTES) {
        const { bytesRead } = await fh.read(leaf, got, TREE_LEAF_BYTES - got, null);
        if (bytesRead === 0) break;
        got += bytesRead;
      }
      if (got === 0) break;
      size += got;
      leaves.push(await crypto.subtle.digest("SHA-256", leaf.subarray(0, got)));
      if (got < TREE_LEAF_BYTES) break;
    }
    return treeRoot(
      size,
      leaves.map((d) => new Uint8Array(d)),
    );
  } finally {
    await fh.close();
  }
}
