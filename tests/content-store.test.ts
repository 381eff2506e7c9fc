/**
 * Uploads by digest against a real farm: a second session's upload of bytes
 * the agent already holds is answered from its store (no bytes sent; modules
 * by their sha256, other bytes with `dedupe` by their tree digest), a probe
 * for unknown bytes is NOT_FOUND, and bytes that do not hash to the digest
 * they are stored under (named wrongly, or changed on disk) are never handed
 * out.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { Session } from "../host-sdk/index.ts";
import { dedupePlan, noteHash, noteTransfer, resetDedupeRates } from "../host-sdk/dedupe-plan.ts";
import { CHUNK_BYTES, type FarmError } from "../protos/index.ts";
import { treeDigest } from "../domain/index.ts";
import { compileVadd } from "./helpers/kernels.ts";
import { startFarm, waitFor } from "./helpers/processes.ts";

const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

describe("uploads by digest (the agent's content store)", () => {
  let farm: Awaited<ReturnType<typeof startFarm>>;
  let storeDir: string;
  const blob = Buffer.alloc(3 * (1 << 20) + 5);
  for (let i = 0; i < blob.length; i++) blob[i] = (i * 131 + 7) & 0xff;

  /** What the store names the blob by: `upload(…, { dedupe: true })` names bytes by their tree digest. */
  let blobName: string;

  before(async () => {
    blobName = `tree-${await treeDigest(blob)}`;
    farm = await startFarm(["cpu:key=cpu"]);
    // The agent's scratch folder (device-agent/agent/options.ts: tmpdir/kfarm-agent-PID).
    storeDir = join(tmpdir(), `kfarm-agent-${farm.agent.proc.pid}`, "store");
  });
  after(() => farm.stop());

  const withSession = async (fn: (s: Session) => Promise<void>) => {
    const s = await farm.client.request("cpu");
    try {
      await fn(s);
    } finally {
      await s.close();
    }
  };
  const reused = async (s: Session) => {
    const c = (await s.stats()).counters;
    return [c.uploads_reused, c.upload_bytes_reused];
  };

  it("a later session's upload of the same bytes comes from the board's store", async () => {
    const module = await compileVadd();
    await withSession(async (s) => {
      await s.upload(blob, "weights.bin", { dedupe: true });
      await s.upload(module);
      assert.deepEqual(await reused(s), [0, 0], "the first time, the bytes travel");
    });
    await waitFor("the blob kept under its tree digest", () => existsSync(join(storeDir, blobName)));
    await withSession(async (s) => {
      await s.upload(blob, "again.bin", { dedupe: true });
      await s.upload(module);
      // The module is one frame: it travels anyway (a board asks first only for more than one).
      assert.deepEqual(await reused(s), [1, blob.length]);
      assert.ok((await s.download("again.bin")).equals(blob));
      assert.deepEqual(
        (await s.listdir()).sort((x, y) => x.name.localeCompare(y.name)),
        [
          { name: "again.bin", size: blob.length },
          { name: module.name, size: module.bytes.byteLength },
        ].sort((x, y) => x.name.localeCompare(y.name)),
      );
      const vadd = (await s.loadModule(module.name)).getFunction("vadd");
      const [a, b, c] = await Promise.all([s.array(new Float32Array([1, 2])), s.array(new Float32Array([3, 4])), s.array({ shape: [2], dtype: "float32" })]);
      await vadd(a, b, c, 2);
      assert.deepEqual([...(await c.toArray())], [4, 6], "the module runs");
      // Replacing a file taken from the store leaves the store's copy alone.
      const other = Buffer.from("other bytes");
      await s.upload(other, "again.bin", { dedupe: true });
      assert.ok((await s.download("again.bin")).equals(other));
    });
    await withSession(async (s) => {
      await s.upload(blob, "third.bin", { dedupe: true });
      assert.deepEqual(await reused(s), [1, blob.length]);
      assert.ok((await s.download("third.bin")).equals(blob));
    });
  });

  it("a probe for bytes the board does not hold is NOT_FOUND and leaves nothing; a malformed probe is refused", async () => {
    await withSession(async (s) => {
      const raw = s as unknown as { request(f: object): Promise<unknown> };
      const unknown = sha(Buffer.from("never uploaded"));
      await assert.rejects(
        raw.request({ upload: { name: "x.bin", total_bytes: 14, data: new Uint8Array(0), done: true, sha256: unknown, probe: true } }),
        (e: FarmError) => e.code === "NOT_FOUND" && e.message.includes(unknown),
      );
      await assert.rejects(
        raw.request({ upload: { name: "x.bin", total_bytes: 3, data: Buffer.from("abc"), done: true, sha256: unknown, probe: true } }),
        (e: FarmError) => e.code === "PROTOCOL_ERROR" && /no data/.test(e.message),
      );
      assert.deepEqual(await s.listdir(), []);
    });
  });

  it("never hands out bytes stored under a digest they do not have (an uploader that named a wrong one)", async () => {
    const bytes = Buffer.alloc(2 * (1 << 20), 9);
    const claimed = sha(Buffer.from("other bytes entirely"));
    await withSession(async (s) => {
      const raw = s as unknown as { request(f: object): Promise<unknown> };
      // A raw upload naming a wrong digest (the SDK computes its own): kept under that name...
      await raw.request({ upload: { name: "liar.bin", total_bytes: bytes.length, data: bytes, done: true, sha256: claimed } });
    });
    await withSession(async (s) => {
      // ...and refused when asked for: the store checks what it hands out (once, right after the keep, where
      // workers cannot write it; at every hand-out otherwise), and drops what fails.
      const raw = s as unknown as { request(f: object): Promise<unknown> };
      await assert.rejects(
        raw.request({ upload: { name: "x.bin", total_bytes: bytes.length, data: new Uint8Array(0), done: true, sha256: claimed, probe: true } }),
        (e: FarmError) => e.code === "NOT_FOUND",
      );
      assert.ok(!existsSync(join(storeDir, claimed)), "dropped");
      assert.deepEqual(await s.listdir(), []);
    });
  });

  it("never hands out a stored file whose bytes changed on disk (a kernel runs as the agent's user)", async () => {
    const stored = join(storeDir, blobName);
    const tampered = Buffer.from(blob);
    tampered[12345] = tampered[12345]! ^ 0xff;
    writeFileSync(stored, tampered);
    await withSession(async (s) => {
      await s.upload(blob, "checked.bin", { dedupe: true });
      assert.deepEqual(await reused(s), [0, 0], "sent in full");
      assert.ok((await s.download("checked.bin")).equals(blob));
    });
    // Stored again, with the right bytes this time.
    await withSession(async (s) => {
      await s.upload(blob, "checked.bin", { dedupe: true });
      assert.deepEqual(await reused(s), [1, blob.length]);
    });
  });

  it("on a lane faster than the hash, dedupe sends at once with the digest on the last frame, and the board keeps the bytes for the next session", async () => {
    const bytes = Buffer.alloc(5 * (1 << 20) + 3, 0x42);
    for (let i = 0; i < bytes.length; i += 1000) bytes[i] = i & 0xff;
    const name = `tree-${await treeDigest(bytes)}`;
    await withSession(async (s) => {
      // This host has "seen" the lane outrun the hash: the plan is to send now.
      const link = `${s.board.id}|${s.lane}`;
      noteHash(link, 64 << 20, 1000);
      noteTransfer(link, 64 << 20, 10);
      assert.equal(dedupePlan(link, bytes.length), "send");
      await s.upload(bytes, "sent.bin", { dedupe: true });
      assert.deepEqual(await reused(s), [0, 0], "sent, not probed");
      assert.ok((await s.download("sent.bin")).equals(bytes));
    });
    await waitFor("the bytes kept under the digest of the last frame", () => existsSync(join(storeDir, name)));
    resetDedupeRates();
    await withSession(async (s) => {
      await s.upload(bytes, "probed.bin", { dedupe: true });
      assert.deepEqual(await reused(s), [1, bytes.length], "asked first, and the board had them");
    });
  });

  it("within one session, bytes it uploaded by digest are taken from the board again, not sent, whatever their name and size", async () => {
    const big = Buffer.alloc(3 * (1 << 20) + 11);
    for (let i = 0; i < big.length; i++) big[i] = (i * 31 + 13) & 0xff;
    const small = Buffer.from(big.subarray(0, 100_000)).reverse();
    const module = await compileVadd();
    await withSession(async (s) => {
      // This host has "seen" the lane outrun the hash: bytes it has not seen in this session are sent at once.
      const link = `${s.board.id}|${s.lane}`;
      noteHash(link, 64 << 20, 1000);
      noteTransfer(link, 64 << 20, 10);
      assert.equal(dedupePlan(link, big.length), "send");
      await s.upload(big, "first.bin", { dedupe: true });
      await s.upload(small, "small.bin", { dedupe: true });
      await s.upload(module);
      assert.deepEqual(await reused(s), [0, 0], "the first time, the bytes travel");
      // Sent again before: the lane's plan ("send") for the large bytes, one frame for the small ones and the module.
      await s.upload(big, "again.bin", { dedupe: true });
      await s.upload(small, "small-again.bin", { dedupe: true });
      await s.upload(module, "vadd-again.kfm");
      assert.deepEqual(await reused(s), [3, big.length + small.length + module.bytes.byteLength], "taken from the board, not sent");
      assert.ok((await s.download("again.bin")).equals(big));
      assert.ok((await s.download("small-again.bin")).equals(small));
      const nop = (await s.loadModule("vadd-again.kfm")).getFunction("nop");
      await nop();
      // Other bytes of a size the session sent are hashed first, asked for, and sent: the board does not hold them.
      const other = Buffer.from(big).fill(7, 0, 10);
      await s.upload(other, "again.bin", { dedupe: true });
      assert.deepEqual((await reused(s))[0], 3);
      assert.ok((await s.download("again.bin")).equals(other));
    });
    resetDedupeRates();
  });

  it("a burst of uploads by digest keeps every one: the worker queues its requests to the agent past the agent's limit", async () => {
    // Each upload with a digest asks the agent to keep the bytes, without waiting; the agent ends a worker with more
    // than WORKER_MAX_PENDING_REQUESTS of them unanswered (a broken or hostile one): an honest worker must queue.
    // Over one frame each: every route sends them with their digest (a smaller one may travel without it).
    const blobs = Array.from({ length: 24 }, (_, i) => Buffer.alloc(CHUNK_BYTES + 1, i + 1));
    await withSession(async (s) => {
      await Promise.all(blobs.map((b, i) => s.upload(b, `burst-${i}.bin`, { dedupe: true })));
      assert.equal((await s.listdir()).length, blobs.length, "the session lived through the burst");
    });
    const names = await Promise.all(blobs.map(async (b) => `tree-${await treeDigest(b)}`));
    await waitFor("every blob of the burst kept", () => names.every((n) => existsSync(join(storeDir, n))));
  });
});
