/**
 * The vta-sim canary's module is kept encoded in the agent (which may not
 * import the host compiler): it must equal what the compiler makes today,
 * and the canary must pass on the simulator and catch a wrong answer.
 * `KFARM_UPDATE_FIXTURES=1 node --import tsx --test tests/vta-canary.test.ts`
 * rewrites the constant after a deliberate compiler change.
 */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";
import { vtaMatmul } from "../host-sdk/index.ts";
import { VTA_CANARY_BUNDLE_BASE64 } from "../device-agent/backends/vta-board/canary.ts";
import { VtaSimBackend } from "../device-agent/backends/vta-sim/backend.ts";
import { VtaMmioBackend } from "../device-agent/backends/vta-mmio/backend.ts";
import { OPCODE } from "../vta/index.ts";

const FIXTURE = fileURLToPath(new URL("../device-agent/backends/vta-board/canary.ts", import.meta.url));

describe("vta-sim canary", () => {
  it("its module is what the compiler makes now", () => {
    const now = Buffer.from(vtaMatmul({ batch: 1, inFeatures: 16, outFeatures: 16 }).bytes).toString("base64");
    if (process.env.KFARM_UPDATE_FIXTURES === "1" && now !== VTA_CANARY_BUNDLE_BASE64) {
      writeFileSync(FIXTURE, readFileSync(FIXTURE, "utf8").replace(VTA_CANARY_BUNDLE_BASE64, now));
      return;
    }
    assert.equal(VTA_CANARY_BUNDLE_BASE64, now, "the VTA compiler's output changed: rerun with KFARM_UPDATE_FIXTURES=1 to refresh the canary");
  });

  it("passes on the simulator, leaves nothing behind, and catches a wrong answer", () => {
    const backend = new VtaSimBackend();
    const { kernelNs, ...result } = backend.canary();
    assert.deepEqual(result, { ok: true, detail: "gemm 1×16·16×16 int8 exact, statistics exact" });
    // Timed on the simulator after the check: a GEMM of one block, microseconds per run.
    assert.ok(kernelNs !== undefined && kernelNs > 0 && kernelNs < 1e7, `canary ${kernelNs} ns per run`);
    assert.equal(backend.sim.dram.usedBytes, 0);
    assert.equal(backend.stats().counters.calls, 0, "the timed runs leave no statistics");
    assert.equal(backend.tainted, false);
    // A simulator that writes a wrong element gets caught.
    const broken = new VtaSimBackend();
    const call = broken.sim.call.bind(broken.sim);
    broken.sim.call = (program, buffers) => {
      const report = call(program, buffers);
      buffers[2]!.write(0, Uint8Array.of(99));
      return report;
    };
    const r = broken.canary();
    assert.equal(r.ok, false);
    assert.match(r.detail, /^gemm C\[0\] = 99, expected -1$/);
  });

  it("passes through the mmio driver on the device model, timed by the clock around the done poll, and catches a device that drops a store", () => {
    const board = new VtaMmioBackend({ device: "model" });
    const { kernelNs, ...result } = board.canary();
    assert.deepEqual(result, { ok: true, detail: "gemm 1×16·16×16 int8 exact, statistics exact" });
    assert.ok(kernelNs !== undefined && kernelNs > 0 && kernelNs < 1e7, `canary ${kernelNs} ns per run`);
    assert.equal(board.stats().counters.dram_bytes_in_use, 0, "the canary's buffers are freed");
    // A device whose stores never reach memory: the CPU reads the zeros it wrote.
    const broken = new VtaMmioBackend({ device: "model" });
    const run = broken.model!.sim.runStream.bind(broken.model!.sim);
    broken.model!.sim.runStream = (insns, what) => {
      const stores = Uint8Array.from(insns);
      for (let i = 0; i < stores.length; i += 16) if ((stores[i]! & 7) === OPCODE.STORE) stores.fill(0, i + 8, i + 16);
      return run(stores, what);
    };
    const r = broken.canary();
    assert.equal(r.ok, false);
    assert.match(r.detail, /^gemm C\[\d+\] = 0, expected -?\d+$/);
  });
});
