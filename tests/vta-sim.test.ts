/**
 * A VTA board behind real tracker and agent processes, twice: a simulator
 * board (`--board vta-sim:key=vta`) and the mmio driver on the register-level
 * device model (`--board vta:model:key=vta`). A hand-built VTA bundle (the matrix-multiply tutorial) is
 * uploaded, called on remote arrays, read back and checked against a plain
 * reference, with TVM's statistics; a corrupt instruction stream and wrong
 * arguments fail with clear errors and the board stays usable.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { BUNDLE_FORMAT, BUNDLE_VERSION, type FarmError, encodeBundle, type FunctionSpec } from "../protos/index.ts";
import { DEFAULT_VTA_HARDWARE as hw, encodeVtaBinary, type VtaBinary } from "../vta/index.ts";
import { matrixMultiplyProgram, randomInt8 } from "../device-agent/backends/vta-sim/test-programs.ts";
import { matmulReference, unpackMatrix } from "../host-sdk/index.ts";
import { startFarm, waitForFreeBoards } from "./helpers/processes.ts";
import { vtaTestBoards } from "./helpers/vta-boards.ts";

const PARAMS: FunctionSpec["params"] = [
  { name: "A", kind: "buffer", dtype: "int8", shape: [1, 16, 1, 16] },
  { name: "B", kind: "buffer", dtype: "int8", shape: [16, 16, 16, 16] },
  { name: "C", kind: "buffer", dtype: "int8" },
];

/** The matrix multiply as `matmul`, and as `broken` with instruction 4's opcode corrupted. */
function matmulBundle(): Uint8Array {
  const good = matrixMultiplyProgram();
  const broken = matrixMultiplyProgram();
  const run = broken.functions.matmul!.runs[0]!;
  run.insns[4 * 16] = (run.insns[4 * 16]! & ~7) | 7;
  const binary: VtaBinary = { hardware: hw.name, functions: { matmul: good.functions.matmul!, broken: broken.functions.matmul! } };
  return encodeBundle({
    format: BUNDLE_FORMAT,
    version: BUNDLE_VERSION,
    target: "vta",
    targetDetails: { hardware: hw.name },
    binary: encodeVtaBinary(binary),
    functions: [
      { name: "matmul", params: PARAMS },
      { name: "broken", params: PARAMS },
    ],
  });
}

/** C = A · Bᵀ wrapped to int8, on the packed A (1×256 as is), B (16, 16, 16, 16) and C (1×256 as is). */
function reference(a: Int8Array, b: Int8Array): Int8Array {
  return matmulReference(a, unpackMatrix(b, 256, 256, hw.blockOut, hw.blockIn), { batch: 1, inFeatures: 256, outFeatures: 256 });
}

for (const board of vtaTestBoards())
  describe(`a session on ${board.what}`, () => {
    let farm: Awaited<ReturnType<typeof startFarm>>;
    const bundle = matmulBundle();
    const a = randomInt8(256, 7);
    const b = randomInt8(65536, 8);

    before(async () => {
      farm = await startFarm([board.flag], { agentArgs: board.agentArgs });
    });
    after(() => farm.stop());

    it("registers with the hardware name as its vta label", async () => {
      const found = (await farm.client.summary()).boards.find((x) => x.key === "vta");
      assert.ok(found, "a board of key vta");
      assert.equal(found.kind, board.kind);
      assert.deepEqual(found.labels, { vta: hw.name, ...board.labels });
      assert.equal(found.capabilities.acc_buffer_bytes, String(hw.accDepth * hw.accElemBytes));
    });

    it("runs the matrix multiply on remote arrays with TVM's statistics, cumulative until cleared", async () => {
      const s = await farm.client.request("vta");
      try {
        await s.upload(bundle, "matmul.kfm");
        const mod = await s.loadModule("matmul.kfm");
        const matmul = mod.getFunction("matmul");
        const ra = await s.array(a, [1, 16, 1, 16]);
        const rb = await s.array(b, [16, 16, 16, 16]);
        const rc = await s.array({ shape: [1, 16, 1, 16], dtype: "int8" });
        await s.clearStats();
        await matmul(ra, rb, rc);
        assert.deepEqual(await rc.toArray(), reference(a, b));
        const st = await s.stats();
        assert.deepEqual(
          [
            st.counters.inp_load_nbytes,
            st.counters.wgt_load_nbytes,
            st.counters.acc_load_nbytes,
            st.counters.uop_load_nbytes,
            st.counters.out_store_nbytes,
            st.counters.gemm_counter,
            st.counters.alu_counter,
          ],
          [256, 65536, 0, 8, 256, 256, 0],
        );
        assert.ok(st.counters[board.timeCounter]! > 0, board.timeCounter);
        assert.equal(st.info.hardware, hw.name);
        await matmul(ra, rb, rc);
        assert.equal((await s.stats()).counters.gemm_counter, 512);
        const timed = await mod.timeEvaluator("matmul", { number: 2, repeat: 2 })(ra, rb, rc);
        assert.equal(timed.results.length, 2);
        // Every timed call counts (the evaluator may add a warm-up call).
        const timedGemms = (await s.stats()).counters.gemm_counter! - 512;
        assert.ok(timedGemms % 256 === 0 && timedGemms >= 256 * timed.number * 2, `${timedGemms} GEMM executions for ${timed.number} × 2 timed calls`);
        await s.clearStats();
        assert.equal((await s.stats()).counters.gemm_counter, 0);
        await assert.rejects(
          mod.timeEvaluator("matmul", { flushCpuCache: true })(ra, rb, rc),
          (e: FarmError) => e.code === "BAD_ARGUMENTS" && new RegExp(`flushCpuCache is an option of CPU boards; this is a ${board.kind} board`).test(e.message),
        );
      } finally {
        await s.close();
      }
    });

    it("fails a corrupt instruction stream naming the instruction, refuses a too-small array naming the parameter, and stays usable", async () => {
      const s = await farm.client.request("vta");
      try {
        await s.upload(bundle, "matmul.kfm");
        const mod = await s.loadModule("matmul.kfm");
        const ra = await s.array(a, [1, 16, 1, 16]);
        const rb = await s.array(b, [16, 16, 16, 16]);
        const rc = await s.array({ shape: [1, 16, 1, 16], dtype: "int8" });
        await assert.rejects(
          mod.getFunction("broken")(ra, rb, rc),
          (e: FarmError) => e.code === "RUNTIME_ERROR" && /instruction 4 .*unknown opcode 7/.test(e.message),
        );
        const small = await s.array({ shape: [100], dtype: "int8" });
        await assert.rejects(
          mod.getFunction("matmul")(ra, rb, small),
          (e: FarmError) => e.code === "BAD_ARGUMENTS" && /argument 2 \(C\)/.test(e.message) && /256 bytes/.test(e.message),
        );
        await mod.getFunction("matmul")(ra, rb, rc);
        assert.deepEqual(await rc.toArray(), reference(a, b));
      } finally {
        await s.close();
      }
      await waitForFreeBoards(farm.client, 1, "vta");
    });
  });
