/**
 * A board error's details reach the host on both ways errors travel, through
 * real tracker and agent processes: a request's Error frame (worker → tracker
 * relay → host; the way a CUDA board's `sticky` travels, which measure() acts
 * on) and a session's end (agent → tracker as SessionEnded → host as the
 * stream's gRPC status). CPU boards have no sticky device errors, so this
 * uses the details a CPU board sets: a bad bundle's field, a crash's signal.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { encodeBundleUnchecked } from "../protos/bundle.ts";
import { decodeBundle, type ModuleBundle } from "../protos/index.ts";
import type { CompiledModule } from "../host-sdk/index.ts";
import { compileBad } from "./helpers/kernels.ts";
import { refused } from "./helpers/assertions.ts";
import { startFarm, waitForFreeBoards } from "./helpers/processes.ts";

describe("error details from a board reach the host", () => {
  let farm: Awaited<ReturnType<typeof startFarm>>;
  let bad: CompiledModule;

  before(async () => {
    [farm, bad] = await Promise.all([startFarm(["cpu:key=cpu"]), compileBad()]);
  });
  after(() => farm?.stop());

  it("in a reply's Error frame: a bundle's bad field, and the session goes on", async () => {
    const s = await farm.client.request("cpu");
    try {
      await s.upload(encodeBundleUnchecked({ ...decodeBundle(bad.bytes), format: "tvm.module" as ModuleBundle["format"] }), "tvm.kfm");
      const e = await refused(s.loadModule("tvm.kfm"), "BAD_BUNDLE");
      // Set by the worker's bundle check (protos/bundle.ts), read here.
      assert.deepEqual(e.details, { field: "format" });
      assert.deepEqual(
        (await s.listdir()).map((f) => f.name),
        ["tvm.kfm"],
        "the session goes on",
      );
    } finally {
      await s.close();
    }
  });

  it("in the session's end: a crashed worker's signal, on the failed call and on every later one", async () => {
    const s = await farm.client.request("cpu");
    await s.upload(bad);
    const mod = await s.loadModule(bad.name);
    const crash = await refused(mod.getFunction("segv")(0), "RUNTIME_CRASH");
    // Set by the agent when its worker died (device-agent/agent/pool.ts), carried by the tracker's status trailer.
    assert.deepEqual(crash.details, { signal: "SIGSEGV" });
    assert.deepEqual(s.closedReason?.details, { signal: "SIGSEGV" });
    const later = await refused(s.listdir(), "RUNTIME_CRASH");
    assert.deepEqual(later.details, { signal: "SIGSEGV" });
    await waitForFreeBoards(farm.client, 1);
  });
});
