import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { TREE_LEAF_BYTES, treeDigest } from "../../domain/index.ts";
import { ContentStore } from "./content-store.ts";

const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

describe("ContentStore", () => {
  const dir = mkdtempSync(join(tmpdir(), "kfarm-store-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** A session file of `n` bytes of `v`, kept under its digest. */
  const keep = async (store: ContentStore, v: number, n = 1200) => {
    const bytes = Buffer.alloc(n, v);
    const path = join(dir, `upload-${v}`);
    writeFileSync(path, bytes);
    await store.keep(path, sha(bytes));
    return { bytes, digest: sha(bytes) };
  };

  it("hands out what it keeps, as a new file, and nothing it does not", async () => {
    const store = new ContentStore(join(dir, "a"), { maxBytes: 1 << 20 });
    const { bytes, digest } = await keep(store, 1);
    const dest = join(dir, "taken");
    assert.equal(await store.take(digest, bytes.length, dest), true);
    assert.ok(readFileSync(dest).equals(bytes));
    assert.equal(await store.take(digest, bytes.length + 1, join(dir, "wrong-size")), false, "the size must match too");
    assert.equal(await store.take(sha(Buffer.from("absent")), 6, join(dir, "absent")), false);
    assert.equal(await store.take("../../etc/passwd", 1, join(dir, "x")), false, "only digests name files");
    assert.ok(!existsSync(join(dir, "wrong-size")) && !existsSync(join(dir, "absent")));
  });

  // A session's kernel can speak on its worker's channel to the agent and name any file of its folder.
  it("keeps nothing through a symbolic link, nor a file another uid owns", async () => {
    const store = new ContentStore(join(dir, "links"), { maxBytes: 1 << 20 });
    const secret = Buffer.from("the agent's secret");
    const target = join(dir, "agent-secret");
    writeFileSync(target, secret);
    const link = join(dir, "innocent-name");
    symlinkSync(target, link);
    await store.keep(link, sha(secret));
    assert.equal(await store.take(sha(secret), secret.length, join(dir, "leaked-1")), false, "kept through a link");
    if (process.getuid?.() === 0) {
      chownSync(target, 61999, 61999);
      await store.keep(target, sha(secret), 61998);
      assert.equal(await store.take(sha(secret), secret.length, join(dir, "leaked-2")), false, "kept a file its worker does not own");
    }
    await store.keep(target, "not-a-digest");
    assert.equal(existsSync(join(dir, "links", "not-a-digest")), false);
  });

  it("where workers run as uids of their own, hashes a file once, after it is kept, and hands it out by links after that without hashing", async () => {
    const store = new ContentStore(join(dir, "immutable"), { maxBytes: 1 << 20, workers: "own-uids" });
    const { bytes, digest } = await keep(store, 21);
    for (let i = 0; i < 3; i++) assert.equal(await store.take(digest, bytes.length, join(dir, `once-${i}`)), true);
    assert.equal(store.hashed, 1, "one check, in the background after the keep");
    assert.ok(readFileSync(join(dir, "once-2")).equals(bytes));
    assert.equal(statSync(join(dir, "once-2")).ino, statSync(join(dir, "immutable", digest)).ino, "a link: no copy");
    // Not weaker: a wrong digest named by its uploader is caught by that one check.
    const liar = Buffer.alloc(1200, 22);
    writeFileSync(join(dir, "liar"), liar);
    await store.keep(join(dir, "liar"), sha(Buffer.from("other bytes")));
    assert.equal(await store.take(sha(Buffer.from("other bytes")), 1200, join(dir, "lie")), false);
    assert.ok(!existsSync(join(dir, "lie")));
    // A stored file whose bytes changed anyway (only root could: the file is the agent's, 0444) is hashed again, and dropped.
    const stored = join(dir, "immutable", digest);
    assert.equal(statSync(stored).mode & 0o777, 0o444);
    chmodSync(stored, 0o644);
    writeFileSync(stored, Buffer.alloc(1200, 23));
    assert.equal(await store.take(digest, bytes.length, join(dir, "changed")), false, "changed bytes are never handed out");
    assert.ok(!existsSync(stored), "and the file is dropped");
  });

  it("where workers run as the agent's user, a kernel that writes a stored file and sets its mtime back is caught by the ctime, without hashing every hand-out", async () => {
    const store = new ContentStore(join(dir, "shared-uid"), { maxBytes: 1 << 20 });
    const { bytes, digest } = await keep(store, 24);
    for (let i = 0; i < 3; i++) assert.equal(await store.take(digest, bytes.length, join(dir, `each-${i}`)), true);
    assert.equal(store.hashed, 1, "hashed once: a hand-out touches nothing of the file");
    const stored = join(dir, "shared-uid", digest);
    assert.notEqual(statSync(join(dir, "each-0")).ino, statSync(stored).ino, "a copy: the stored inode never enters a session");
    const { atime, mtime } = statSync(stored);
    chmodSync(stored, 0o644);
    writeFileSync(stored, Buffer.alloc(1200, 25));
    utimesSync(stored, atime, mtime);
    assert.equal(await store.take(digest, bytes.length, join(dir, "tampered")), false);
    assert.equal(store.hashed, 2, "the moved ctime made it hash again, and the bytes did not match");
  });

  it("where workers run as uids of their own, hands out without a copy: a session's link outlives the file's eviction, and release() frees it", async () => {
    const root = join(dir, "handout");
    const store = new ContentStore(root, { maxBytes: 1 << 20, workers: "own-uids" });
    const { bytes, digest } = await keep(store, 28);
    const dest = join(dir, "handout-session-file");
    assert.equal(await store.take(digest, bytes.length, dest, "session-1"), true);
    assert.ok(lstatSync(dest).isSymbolicLink(), "a symbolic link into the store: no copy");
    assert.equal(readlinkSync(dest), join(root, "handed", "session-1", digest), "named by the digest, which a probe needs anyway");
    assert.equal(statSync(root).mode & 0o777, 0o711, "workers may pass through the store, not list it");
    unlinkSync(join(root, digest));
    assert.ok(readFileSync(dest).equals(bytes), "evicted from the store, still the session's");
    store.release("session-1");
    assert.ok(!existsSync(join(root, "handed", "session-1")));
    assert.equal(await store.take(digest, bytes.length, join(dir, "after-eviction"), "session-2"), false);
  });

  it("where workers run as root (they could set the clock and forge a ctime), hashes a file each time it hands it out", async () => {
    const store = new ContentStore(join(dir, "root-workers"), { maxBytes: 1 << 20, workers: "root" });
    const { bytes, digest } = await keep(store, 26);
    for (let i = 0; i < 3; i++) assert.equal(await store.take(digest, bytes.length, join(dir, `root-${i}`)), true);
    assert.equal(store.hashed, 3);
  });

  it("keeps and checks files named by their tree digest, and drops one whose bytes are not its tree digest", async () => {
    const store = new ContentStore(join(dir, "tree"), { maxBytes: 16 << 20 });
    const bytes = Buffer.alloc(3 * TREE_LEAF_BYTES + 12345, 27);
    for (let i = 0; i < bytes.length; i += 4096) bytes[i] = i & 0xff;
    const digest = `tree-${await treeDigest(bytes)}`;
    writeFileSync(join(dir, "tree-input"), bytes);
    await store.keep(join(dir, "tree-input"), digest);
    assert.equal(await store.take(digest, bytes.length, join(dir, "tree-out")), true);
    assert.ok(readFileSync(join(dir, "tree-out")).equals(bytes));
    assert.equal(await store.take(`tree-${sha(bytes)}`, bytes.length, join(dir, "tree-sha")), false, "a tree digest is not a sha256");
    const other = `tree-${await treeDigest(Buffer.alloc(10))}`;
    await store.keep(join(dir, "tree-input"), other);
    assert.equal(await store.take(other, bytes.length, join(dir, "tree-lie")), false, "kept under another file's tree digest: caught by its check");
  });

  it("stays within its bytes, dropping the least recently used first", async () => {
    const store = new ContentStore(join(dir, "b"), { maxBytes: 3000 });
    const one = await keep(store, 11);
    const two = await keep(store, 12);
    // One is used after two was kept: two is now the least recently used.
    const past = new Date(Date.now() - 60_000);
    utimesSync(join(dir, "b", two.digest), past, past);
    assert.equal(await store.take(one.digest, 1200, join(dir, "used-one")), true);
    await keep(store, 13);
    assert.ok(existsSync(join(dir, "b", one.digest)), "recently used: kept");
    assert.ok(!existsSync(join(dir, "b", two.digest)), "least recently used: dropped");
  });
});
