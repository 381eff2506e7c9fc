/** LocalSession: the same API on an in-process board (TVM's rpc.LocalSession). */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { LocalSession, compileCpu, type FarmError } from "../index.ts";
import { VADD_SOURCE } from "./helpers/kernels.ts";

describe("LocalSession", () => {
  it("uploads, loads, calls and times a kernel without a tracker", async () => {
    const s = await LocalSession.open();
    const m = await compileCpu(VADD_SOURCE, { functions: { vadd: ["float32* a", "float32* b", "float32* c", "int32 n"] } });
    await s.upload(m);
    assert.deepEqual(
      (await s.listdir()).map((e) => e.name),
      [m.name],
    );
    const mod = await s.loadModule(m.name);
    const a = await s.array(new Float32Array([1, 2, 3, 4]));
    const b = await s.array(new Float32Array([10, 20, 30, 40]));
    const c = await s.array({ shape: [4], dtype: "float32" });
    await mod.getFunction("vadd")(a, b, c, 4);
    assert.deepEqual([...((await c.toArray()) as Float32Array)], [11, 22, 33, 44]);
    const t = await mod.timeEvaluator("vadd", { number: 2, repeat: 3 })(a, b, c, 4);
    assert.equal(t.results.length, 3);
    assert.equal((await s.stats()).counters.calls, 1 + 1 + 3 * 2);
    await assert.rejects(mod.getFunction("vadd")(a, b, 4 as never), (e: FarmError) => e.code === "BAD_ARGUMENTS");
    await s.close();
    await assert.rejects(s.listdir(), (e: FarmError) => e.code === "SESSION_CLOSED");
  });
});
