/**
 * The cycle estimate (timing.ts): instruction costs, and modules running
 * concurrently and waiting on tokens. Virtual threading's latency hiding on
 * the compiled conv2d tutorial is checked in tests/vta-compile-sim.test.ts.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DEFAULT_VTA_HARDWARE as hw, MEM, UOP_BUFFER } from "../../../vta/index.ts";
import { DEFAULT_TIMING, runVtaFunction } from "../vta-sim/index.ts";
import { aluCycles, dmaCycles, gemmCycles } from "./timing.ts";
import { binaryOf, insn, rawRun } from "../vta-sim/test-programs.ts";

const t = DEFAULT_TIMING;

describe("cycle estimate", () => {
  it("charges DMA by bytes over the bus plus latency and padding, GEMM and ALU by micro-op executions", () => {
    const load = { xSize: 4, ySize: 2, xStride: 4, xPad0: 1, pushNext: true };
    const gemm = { uopEnd: 1, iterOut: 3, iterIn: 5, popPrev: true };
    const program = binaryOf([
      rawRun(
        [insn.load(MEM.INP, load), insn.load(MEM.UOP), insn.gemm(gemm), insn.alu(0, { iterIn: 7, useImm: true }), insn.finish()],
        [
          [0, 0],
          [1, UOP_BUFFER],
        ],
        [{ dst: 0, src: 0, wgt: 0 }],
      ),
    ]);
    const r = runVtaFunction(program, "f", [new Uint8Array(8 * hw.inpElemBytes)]);
    const inpLoad = dmaCycles(t, 8 * hw.inpElemBytes, 2);
    const uopLoad = dmaCycles(t, 4, 0);
    // GEMM waits for both the INP load (token) and the UOP load (same module); then ALU, FINISH.
    const want = Math.max(inpLoad, uopLoad) + gemmCycles(t, 15) + aluCycles(t, 7, true) + t.nopCycles;
    assert.equal(r.cycles, want);
    assert.equal(r.counters.cycle_count, want);
    assert.equal(r.counters.load_busy_cycles, inpLoad);
    assert.equal(r.counters.compute_busy_cycles, uopLoad + gemmCycles(t, 15) + aluCycles(t, 7, true) + t.nopCycles);
    // The bus moves 2^LOG_BUS_WIDTH bits per cycle: doubling it shortens the load.
    const wide = runVtaFunction(program, "f", [new Uint8Array(8 * hw.inpElemBytes)], { timing: { logBusWidth: t.logBusWidth + 1 } });
    assert.equal(wide.cycles, want - (inpLoad - dmaCycles({ ...t, logBusWidth: t.logBusWidth + 1 }, 8 * hw.inpElemBytes, 2)));
  });

  it("runs independent modules concurrently: a run lasts as long as its busiest module", () => {
    const program = binaryOf([
      rawRun(
        [
          insn.load(MEM.WGT, { xSize: 8 }), // load module
          insn.store({ xSize: 2 }), // store module, independent
          insn.finish(),
        ],
        [
          [0, 0],
          [1, 1],
        ],
      ),
    ]);
    const r = runVtaFunction(program, "f", [new Uint8Array(8 * hw.wgtElemBytes), new Uint8Array(2 * hw.outElemBytes)]);
    const wgt = dmaCycles(t, 8 * hw.wgtElemBytes, 0);
    const store = dmaCycles(t, 2 * hw.outElemBytes, 0);
    assert.equal(r.cycles, Math.max(wgt, store, t.nopCycles));
    assert.ok(r.cycles < wgt + store);
  });
});
