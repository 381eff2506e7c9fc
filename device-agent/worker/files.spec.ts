/** A session's files: plain upload names, and the caps per file and per session. */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, it } from "node:test";
import { FarmError } from "../../protos/index.ts";
import { checkUploadName, SessionFiles } from "./files.ts";

function code(c: string, re?: RegExp) {
  return (e: unknown) => {
    assert.ok(e instanceof FarmError, `expected a FarmError, got ${String(e)}`);
    assert.equal(e.code, c);
    if (re) assert.match(e.message, re);
    return true;
  };
}

describe("checkUploadName", () => {
  it("accepts plain file names and returns them", async () => {
    for (const name of ["kernel.kfm", "a", "data.bin", "3f2a9c.kfm", "with space.txt", "ünïcödé", "a.b.c", ".hidden", "x".repeat(255), `${"é".repeat(127)}x`]) {
      assert.equal(checkUploadName(name), name);
    }
  });

  it("rejects names that are not plain file names, saying why", async () => {
    const cases: Array<[string, RegExp]> = [
      ["", /is empty/],
      ["a/b", /path separator/],
      ["/etc/passwd", /path separator/],
      ["x\\y", /path separator/],
      ["..", /contains "\.\."/],
      ["a..b", /contains "\.\."/],
      [".", /is "\."/],
      ["\u0001", /control character/],
      ["tab\there", /control character/],
      ["nl\n", /control character/],
      ["del\x7f", /control character/],
      ["x".repeat(300), /300 bytes long .*limit is 255 bytes/],
      ["é".repeat(200), /400 bytes long in UTF-8 \(200 characters\); the filesystem's limit is 255 bytes/],
      [".module0.so", /reserved/],
    ];
    for (const [name, why] of cases) {
      assert.throws(() => checkUploadName(name), code("INVALID_NAME", why), JSON.stringify(name));
      assert.throws(
        () => checkUploadName(name), // Long names are quoted by their first 40 characters.
        (e: FarmError) => e.message.includes(JSON.stringify(name.slice(0, 40)).slice(0, -1)) && /plain file names/.test(e.message),
      );
    }
  });
});

describe("SessionFiles", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "kf-files-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const bytes = (n: number, fill = 1) => new Uint8Array(n).fill(fill);

  async function put(files: SessionFiles, name: string, data: Uint8Array, chunk = data.byteLength || 1): Promise<void> {
    const up = files.begin(name, data.byteLength);
    try {
      for (let off = 0; off < data.byteLength; off += chunk) await files.append(up, data.subarray(off, off + chunk));
    } catch (err) {
      files.abandon(up);
      throw err;
    }
    await files.finish(up);
  }

  it("writes, lists, reads and removes files", async () => {
    const files = new SessionFiles(dir, { maxUploadBytes: 1000, maxSessionBytes: 1000 });
    await put(files, "b.bin", bytes(10, 7), 3);
    await put(files, "a.txt", new TextEncoder().encode("hello"));
    assert.deepEqual(files.list(), [
      { name: "a.txt", size: 5 },
      { name: "b.bin", size: 10 },
    ]);
    assert.deepEqual([...files.read("b.bin")], Array(10).fill(7));
    files.remove("b.bin");
    assert.deepEqual(
      files.list().map((f) => f.name),
      ["a.txt"],
    );
    assert.throws(() => files.read("b.bin"), code("NOT_FOUND", /no file "b\.bin"/));
    assert.throws(() => files.remove("b.bin"), code("NOT_FOUND", /b\.bin/));
  });

  it("writes an upload's chunks at their own offsets, several at once, and closes it only once all are written", async () => {
    const files = new SessionFiles(dir, { maxUploadBytes: 1 << 20, maxSessionBytes: 1 << 20 });
    const data = new Uint8Array(64 * 1000).map((_, i) => (i * 7 + (i >> 10)) & 0xff);
    await put(files, "many.bin", data, 1000);
    assert.deepEqual(readFileSync(join(dir, "many.bin")), Buffer.from(data));
  });

  it("replaces a large file by a new one, the old unlinked before the new one's first write", async () => {
    const files = new SessionFiles(dir, { maxUploadBytes: 4 << 20, maxSessionBytes: 4 << 20 });
    await put(files, "big.bin", bytes(2 << 20, 1), 1 << 20);
    await put(files, "big.bin", bytes(2 << 20, 2), 1 << 20);
    assert.deepEqual(readdirSync(dir), ["big.bin"]);
    assert.ok(readFileSync(join(dir, "big.bin")).every((b) => b === 2));
    assert.deepEqual(files.list(), [{ name: "big.bin", size: 2 << 20 }]);
  });

  it("deletes an abandoned upload at once, its writes still in flight", async () => {
    const files = new SessionFiles(dir, { maxUploadBytes: 1 << 20, maxSessionBytes: 1 << 20 });
    const up = files.begin("gone.bin", 3000);
    for (let i = 0; i < 3; i++) await files.append(up, bytes(1000, i));
    files.abandon(up);
    assert.deepEqual(files.list(), []);
    // Its name is free for the next upload, which the late writes of the abandoned one do not touch.
    await put(files, "gone.bin", bytes(10, 9));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual([...readFileSync(join(dir, "gone.bin"))], Array(10).fill(9));
  });

  it("reads a file for a download a range at a time, from its size when opened", async () => {
    const files = new SessionFiles(dir, { maxUploadBytes: 1000, maxSessionBytes: 1000 });
    writeFileSync(join(dir, "d.bin"), Buffer.from([1, 2, 3, 4, 5, 6, 7]));
    const src = files.openRead("d.bin");
    assert.equal(src.size, 7);
    assert.deepEqual([...src.read(0, 3)], [1, 2, 3]);
    assert.deepEqual([...src.read(3, 4)], [4, 5, 6, 7]);
    // Shrunk under the download (a kernel still writing it): an error, not short or stale bytes.
    writeFileSync(join(dir, "d.bin"), Buffer.from([1, 2]));
    assert.throws(() => src.read(0, 7), code("RUNTIME_ERROR", /"d\.bin" shrank while it was downloaded/));
    src.close?.();
    assert.throws(() => files.openRead("nope.bin"), code("NOT_FOUND", /no file "nope\.bin"/));
    assert.throws(() => files.openRead("../x"), code("INVALID_NAME"));
  });

  it("checks names on every operation", async () => {
    const files = new SessionFiles(dir, { maxUploadBytes: 1000, maxSessionBytes: 1000 });
    assert.throws(() => files.begin("../escape", 1), code("INVALID_NAME"));
    assert.throws(() => files.read("../../etc/passwd"), code("INVALID_NAME"));
    assert.throws(() => files.remove("a/b"), code("INVALID_NAME"));
    assert.equal(existsSync(join(dir, "..", "escape")), false);
  });

  it("hides loaded-module files from the listing", async () => {
    const files = new SessionFiles(dir, { maxUploadBytes: 1000, maxSessionBytes: 1000 });
    writeFileSync(join(dir, ".module0.so"), "ELF");
    await put(files, "k.kfm", bytes(4));
    assert.deepEqual(
      files.list().map((f) => f.name),
      ["k.kfm"],
    );
  });

  it("refuses a file over the per-file cap when announced, naming the sizes", async () => {
    const files = new SessionFiles(dir, { maxUploadBytes: 100, maxSessionBytes: 1000 });
    assert.throws(() => files.begin("big.bin", 101), code("TOO_LARGE", /"big\.bin" is 101 bytes.*at most 100 bytes per file/));
    assert.equal(existsSync(join(dir, "big.bin")), false);
    await put(files, "exact.bin", bytes(100));
    assert.deepEqual(files.list(), [{ name: "exact.bin", size: 100 }]);
  });

  it("refuses a file that grows past the per-file cap while being written (announced size lied)", async () => {
    const files = new SessionFiles(dir, { maxUploadBytes: 100, maxSessionBytes: 1000 });
    const up = files.begin("liar.bin", 10);
    await files.append(up, bytes(60));
    await assert.rejects(files.append(up, bytes(60)), code("TOO_LARGE", /120 bytes.*at most 100/));
    files.abandon(up);
    assert.deepEqual(files.list(), []);
    // The abandoned bytes no longer count: the whole session quota is free again.
    const files2Limit = new SessionFiles(dir, { maxUploadBytes: 100, maxSessionBytes: 100 });
    await put(files2Limit, "ok.bin", bytes(100));
  });

  it("refuses uploads past the per-session cap, and counts only what is kept", async () => {
    const files = new SessionFiles(dir, { maxUploadBytes: 100, maxSessionBytes: 250 });
    await put(files, "one.bin", bytes(100));
    await put(files, "two.bin", bytes(100));
    assert.throws(() => files.begin("three.bin", 100), code("TOO_LARGE", /would bring this session's files to 300 bytes; the cap is 250 bytes per session/));
    await put(files, "small.bin", bytes(50));
    assert.throws(() => files.begin("one-more.bin", 1), code("TOO_LARGE", /251 bytes/));
    files.remove("two.bin");
    await put(files, "three.bin", bytes(100));
    assert.deepEqual(
      files.list().map((f) => [f.name, f.size]),
      [
        ["one.bin", 100],
        ["small.bin", 50],
        ["three.bin", 100],
      ],
    );
  });

  it("replacing a file counts only the new size", async () => {
    const files = new SessionFiles(dir, { maxUploadBytes: 100, maxSessionBytes: 150 });
    await put(files, "a.bin", bytes(100, 1));
    await put(files, "a.bin", bytes(100, 2));
    await put(files, "b.bin", bytes(50));
    assert.deepEqual([...files.read("a.bin")].slice(0, 3), [2, 2, 2]);
    assert.throws(() => files.begin("c.bin", 1), code("TOO_LARGE"));
  });

  it("a file written in several chunks counts once toward the session cap", async () => {
    // 200 bytes in 50-byte chunks with a 250-byte session cap and an empty session: must fit.
    const files = new SessionFiles(dir, { maxUploadBytes: 250, maxSessionBytes: 250 });
    await put(files, "chunked.bin", bytes(200, 9), 50);
    assert.deepEqual(files.list(), [{ name: "chunked.bin", size: 200 }]);
    assert.equal(readFileSync(join(dir, "chunked.bin")).byteLength, 200);
    await put(files, "rest.bin", bytes(50), 10);
    assert.throws(() => files.begin("over.bin", 1), code("TOO_LARGE", /251 bytes/));
  });
});
