import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
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
    const store = new ContentStore(join(dir, "a"), 1 << 20);
    const { bytes, digest } = await keep(store, 1);
    const dest = join(dir, "taken");
    assert.equal(await store.take(digest, bytes.length, dest), true);
    assert.ok(readFileSync(dest).equals(bytes));
    assert.equal(await store.take(digest, bytes.length + 1, join(dir, "wrong-size")), false, "the size must match too");
    assert.equal(await store.take(sha(Buffer.from("absent")), 6, join(dir, "absent")), false);
    assert.equal(await store.take("../../etc/passwd", 1, join(dir, "x")), false, "only digests name files");
    assert.ok(!existsSync(join(dir, "wrong-size")) && !existsSync(join(dir, "absent")));
  });

  // A session's kernel can speak on its worker's IPC channel and name any file of its folder.
  it("keeps nothing through a symbolic link, nor a file another uid owns", async () => {
    const store = new ContentStore(join(dir, "links"), 1 << 20);
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

  it("stays within its bytes, dropping the least recently used first", async () => {
    const store = new ContentStore(join(dir, "b"), 3000);
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
