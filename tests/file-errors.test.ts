/**
 * What a host hears when a session's file operation fails, against a real
 * tracker and agent (issue 27): a typed error naming the file by its name in
 * the session, never a path of the agent's. Names over the filesystem's
 * limit in bytes (not characters) are INVALID_NAME naming both numbers.
 * Kernels make what the API never does — a folder, a dangling link — to
 * reach the file system's own errors.
 */
import assert from "node:assert/strict";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { compileCpu, type RemoteModule, type Session } from "../host-sdk/index.ts";
import { decodeBundle, encodeBundle, FarmError } from "../protos/index.ts";
import { startFarm } from "./helpers/processes.ts";

const MAKERS = `
#include <errno.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>
/* In the session's folder (the worker's working directory while it serves the session). */
void make_dir(const uint8_t* name, int32_t* out) { out[0] = mkdir((const char*)name, 0700) ? errno : 0; }
void make_dangling(const uint8_t* name, int32_t* out) { out[0] = symlink("nowhere-at-all", (const char*)name) ? errno : 0; }
`;

describe("file errors name the session's file, never the agent's path", () => {
  let farm: Awaited<ReturnType<typeof startFarm>>;
  let s: Session;
  let makers: RemoteModule;
  let scratch: string;

  before(async () => {
    farm = await startFarm(["cpu:key=cpu"]);
    scratch = join(tmpdir(), `kfarm-agent-${farm.agent.proc.pid}`);
    s = await farm.client.request("cpu", { deadlineMs: 10_000 });
    const m = await compileCpu(MAKERS, { functions: { make_dir: ["uint8* name", "int32* out"], make_dangling: ["uint8* name", "int32* out"] } });
    await s.upload(m);
    makers = await s.loadModule(m.name);
  });
  after(async () => {
    await s?.close();
    await farm?.stop();
  });

  /** Runs `fn` and returns the FarmError it fails with, checked to hold no path of the agent's. */
  async function failure(fn: () => Promise<unknown>): Promise<FarmError> {
    try {
      await fn();
    } catch (err) {
      assert.ok(err instanceof FarmError, `expected a FarmError, got ${String(err)}`);
      assert.ok(!err.message.includes(scratch), `the message names the agent's scratch folder ${scratch}: ${err.message}`);
      assert.doesNotMatch(err.message, /kfarm-agent-\d+/, `the message names the agent's folder: ${err.message}`);
      assert.ok(!err.message.includes(tmpdir() + "/"), `the message names a path under ${tmpdir()}: ${err.message}`);
      return err;
    }
    assert.fail("expected a failure");
  }

  async function make(fn: "make_dir" | "make_dangling", name: string): Promise<void> {
    const out = await s.array({ shape: [1], dtype: "int32" });
    await makers.getFunction(fn)(await s.array(new Uint8Array(Buffer.from(`${name}\0`))), out);
    assert.equal(((await out.toArray()) as Int32Array)[0], 0, `${fn}(${name}) failed in the kernel`);
  }

  it("refuses a name of 200 × é (200 characters, 400 bytes) as INVALID_NAME naming the limit in bytes", async () => {
    const name = "é".repeat(200);
    const e = await failure(() => s.upload(new Uint8Array([1, 2, 3]), name));
    assert.equal(e.code, "INVALID_NAME", e.message);
    assert.match(e.message, /255 bytes/);
    assert.match(e.message, /\b400 bytes\b/);
    // 127 × é (254 bytes) and one more ASCII letter is exactly the limit: it fits.
    const longest = `${"é".repeat(127)}x`;
    await s.upload(new Uint8Array([7]), longest);
    assert.ok((await s.listdir()).some((f) => f.name === longest));
    await s.remove(longest);
  });

  it("download of a missing file: NOT_FOUND naming it", async () => {
    const e = await failure(() => s.download("no-such-file.bin"));
    assert.equal(e.code, "NOT_FOUND");
    assert.match(e.message, /"no-such-file\.bin"/);
  });

  it("a folder a kernel made: remove, download, load and upload over it are refused naming it", async () => {
    await make("make_dir", "a-folder");
    for (const [what, fn] of [
      ["remove", () => s.remove("a-folder")],
      ["download", () => s.download("a-folder")],
      ["load", () => s.loadModule("a-folder")],
      ["upload", () => s.upload(new Uint8Array([1]), "a-folder")],
    ] as const) {
      const e = await failure(fn);
      assert.equal(e.code, "INVALID_NAME", `${what}: ${e.message}`);
      assert.match(e.message, /"a-folder" is a folder/, what);
    }
  });

  it("listdir with a dangling link a kernel made lists it; download of it is NOT_FOUND", async () => {
    await make("make_dangling", "dangling");
    const listing = await s.listdir();
    assert.ok(
      listing.some((f) => f.name === "dangling"),
      JSON.stringify(listing),
    );
    const e = await failure(() => s.download("dangling"));
    assert.equal(e.code, "NOT_FOUND");
    assert.match(e.message, /"dangling"/);
  });

  it("a shared object the loader refuses: LOAD_ERROR, without the agent's path in the loader's words", async () => {
    const m = await compileCpu("void f(void) {}", { functions: { f: [] } });
    const bundle = decodeBundle(m.bytes);
    await s.upload(encodeBundle({ ...bundle, binary: new Uint8Array(4096).fill(7) }), "garbage.kfm");
    const e = await failure(() => s.loadModule("garbage.kfm"));
    assert.equal(e.code, "LOAD_ERROR", e.message);
  });

  it("the session still serves after every refusal", async () => {
    await s.upload(new Uint8Array([1, 2, 3]), "ok.bin");
    assert.deepEqual([...(await s.download("ok.bin"))], [1, 2, 3]);
  });
});
