/**
 * LOAD semantics: 2D strides, on-the-fly zero padding, NOPs, ACC / ACC_8BIT /
 * UOP loads, DRAM addressing (relocated and absolute), and the errors of
 * out-of-range SRAM and DRAM accesses.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DEFAULT_VTA_HARDWARE as hw, MEM, UOP_BUFFER } from "../../../vta/index.ts";
import { FarmError } from "../../../protos/index.ts";
import { PAGE_BYTES, VtaSimulator, runVtaFunction } from "./index.ts";
import { binaryOf, insn, rawRun } from "./test-programs.ts";

/** `n` DRAM elements of `elemBytes`, lane k of element e = (e * 7 + k) mod 256. */
function pattern(n: number, elemBytes: number): Uint8Array {
  const b = new Uint8Array(n * elemBytes);
  for (let e = 0; e < n; e++) for (let k = 0; k < elemBytes; k++) b[e * elemBytes + k] = (e * 7 + k) & 0xff;
  return b;
}

function rejects(fn: () => unknown, code: string, ...fragments: string[]): FarmError {
  let err: unknown;
  try {
    fn();
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof FarmError, `expected a FarmError ${code}, got ${String(err)}`);
  assert.equal(err.code, code, err.message);
  for (const f of fragments) assert.ok(err.message.includes(f), `message should name ${JSON.stringify(f)}: ${err.message}`);
  return err;
}

describe("LOAD", () => {
  it("copies a strided 2D tile and pads it with zeros, counting only the copied bytes", () => {
    const E = hw.inpElemBytes;
    const dram = pattern(20, E);
    const sim = new VtaSimulator();
    sim.core.srams.inp.fill(0x55);
    const f = { sramBase: 3, dramBase: 2, ySize: 2, xSize: 3, xStride: 5, yPad0: 1, yPad1: 1, xPad0: 1, xPad1: 2, pushNext: true };
    const r = runVtaFunction(binaryOf([rawRun([insn.load(MEM.INP, f), insn.finish({ popPrev: true })], [[0, 0]])]), "f", [dram], { simulator: sim });
    const inp = sim.core.srams.inp;
    const width = f.xPad0 + f.xSize + f.xPad1;
    const rows = f.yPad0 + f.ySize + f.yPad1;
    for (let row = 0; row < rows; row++) {
      for (let col = 0; col < width; col++) {
        const y = row - f.yPad0;
        const x = col - f.xPad0;
        const inside = y >= 0 && y < f.ySize && x >= 0 && x < f.xSize;
        const elem = f.sramBase + row * width + col;
        for (let k = 0; k < E; k++) {
          const want = inside ? (((f.dramBase + y * f.xStride + x) * 7 + k) << 24) >> 24 : 0;
          assert.equal(inp[elem * E + k], want, `SRAM element ${elem} lane ${k} (row ${row}, col ${col})`);
        }
      }
    }
    // Nothing outside the tile was written.
    assert.equal(inp[f.sramBase * E - 1], 0x55);
    assert.equal(inp[(f.sramBase + width * rows) * E], 0x55);
    assert.equal(r.counters.inp_load_nbytes, f.xSize * f.ySize * E);
    assert.equal(r.counters.wgt_load_nbytes, 0);
  });

  it("pads WGT loads too, and counts WGT bytes", () => {
    const E = hw.wgtElemBytes;
    const sim = new VtaSimulator();
    sim.core.srams.wgt.fill(9);
    const r = runVtaFunction(
      binaryOf([
        rawRun(
          [insn.load(MEM.WGT, { sramBase: 1, dramBase: 1, ySize: 2, xSize: 1, xStride: 2, yPad0: 1, pushNext: true }), insn.finish({ popPrev: true })],
          [[0, 0]],
        ),
      ]),
      "f",
      [pattern(4, E)],
      { simulator: sim },
    );
    const wgt = sim.core.srams.wgt;
    assert.ok(
      wgt.subarray(1 * E, 2 * E).every((v) => v === 0),
      "the y_pad_0 row is zero",
    );
    assert.equal(wgt[2 * E + 5], ((1 * 7 + 5) << 24) >> 24);
    assert.equal(wgt[3 * E + 5], ((3 * 7 + 5) << 24) >> 24);
    assert.equal(r.counters.wgt_load_nbytes, 2 * E);
  });

  it("treats x_size 0 as a NOP: nothing moves, nothing counts, but its tokens still flow", () => {
    const sim = new VtaSimulator();
    sim.core.srams.inp.fill(0x55);
    const r = runVtaFunction(
      binaryOf([rawRun([insn.load(MEM.INP, { xSize: 0, ySize: 3, pushNext: true }), insn.finish({ popPrev: true })], [[0, 0]])]),
      "f",
      [pattern(4, hw.inpElemBytes)],
      { simulator: sim },
    );
    assert.ok(sim.core.srams.inp.every((v) => v === 0x55));
    assert.equal(r.counters.inp_load_nbytes, 0);
    assert.equal(r.counters.instructions, 2);
  });

  it("loads int32 accumulators (ACC) and sign-extends int8 ones (ACC_8BIT), both counted at ACC element size", () => {
    const lanes = hw.batch * hw.blockOut;
    const acc32 = Int32Array.from({ length: 3 * lanes }, (_, i) => (i % 2 ? -1 : 1) * (i * 100_003));
    const acc8 = Int8Array.from({ length: 2 * lanes }, (_, i) => [-128, -1, 0, 5, 127][i % 5]!);
    const sim = new VtaSimulator();
    const r = runVtaFunction(
      binaryOf([
        rawRun(
          [insn.load(MEM.ACC, { sramBase: 4, dramBase: 1, xSize: 2 }), insn.load(MEM.ACC_8BIT, { sramBase: 10, dramBase: 1, xSize: 1 }), insn.finish()],
          [
            [0, 0],
            [1, 1],
          ],
        ),
      ]),
      "f",
      [new Uint8Array(acc32.buffer), new Uint8Array(acc8.buffer)],
      { simulator: sim },
    );
    const acc = sim.core.srams.acc;
    assert.deepEqual([...acc.subarray(4 * lanes, 6 * lanes)], [...acc32.subarray(lanes, 3 * lanes)]);
    assert.deepEqual([...acc.subarray(10 * lanes, 11 * lanes)], [...acc8.subarray(lanes, 2 * lanes)]);
    assert.equal(r.counters.acc_load_nbytes, 3 * hw.accElemBytes);
  });

  it("loads micro-ops from the run's micro-op buffer and decodes them", () => {
    const uops = [
      { dst: 5, src: 6, wgt: 7 },
      { dst: hw.accDepth - 1, src: hw.inpDepth - 1, wgt: hw.wgtDepth - 1 },
      { dst: 1, src: 0, wgt: 2 },
    ];
    const sim = new VtaSimulator();
    const r = runVtaFunction(
      binaryOf([rawRun([insn.load(MEM.UOP, { sramBase: 20, dramBase: 1, xSize: 2, xStride: 2 }), insn.finish()], [[0, UOP_BUFFER]], uops)]),
      "f",
      [],
      { simulator: sim },
    );
    const s = sim.core.srams;
    assert.deepEqual([s.uopDst[20], s.uopSrc[20], s.uopWgt[20]], [hw.accDepth - 1, hw.inpDepth - 1, hw.wgtDepth - 1]);
    assert.deepEqual([s.uopDst[21], s.uopSrc[21], s.uopWgt[21]], [1, 0, 2]);
    assert.equal(s.uopDst[22], 0, "only x_size micro-ops are written");
    assert.equal(r.counters.uop_load_nbytes, 2 * hw.uopElemBytes);
  });

  it("addresses DRAM absolutely without a relocation: physical address = (page + 1) << 12", () => {
    const E = hw.inpElemBytes;
    const sim = new VtaSimulator();
    const dram = pattern(8, E);
    // A fresh simulator places the first argument at page 0, i.e. physical address 4096.
    const base = PAGE_BYTES / E;
    runVtaFunction(binaryOf([rawRun([insn.load(MEM.INP, { dramBase: base + 3, pushNext: true }), insn.finish({ popPrev: true })])]), "f", [dram], {
      simulator: sim,
      params: [{ name: "data", kind: "buffer" }],
    });
    assert.deepEqual([...sim.core.srams.inp.subarray(0, E)], [...new Int8Array(dram.buffer, 3 * E, E)]);
  });

  it("refuses an SRAM range past the buffer, naming the instruction", () => {
    const program = binaryOf([rawRun([insn.finish(), insn.load(MEM.INP, { sramBase: hw.inpDepth - 2, xSize: 3 })], [[1, 0]])]);
    rejects(
      () => runVtaFunction(program, "f", [pattern(4, hw.inpElemBytes)]),
      "RUNTIME_ERROR",
      "instruction 1",
      "LOAD INP",
      `[${hw.inpDepth - 2}, ${hw.inpDepth + 1})`,
      String(hw.inpDepth),
    );
    const padded = binaryOf([rawRun([insn.load(MEM.ACC, { sramBase: hw.accDepth - 1, xSize: 1, yPad1: 1 }), insn.finish()], [[0, 0]])]);
    rejects(() => runVtaFunction(padded, "f", [pattern(4, hw.accElemBytes)]), "RUNTIME_ERROR", "instruction 0", "ACC");
  });

  it("refuses a load into OUT, naming the instruction", () => {
    rejects(
      () => runVtaFunction(binaryOf([rawRun([insn.load(MEM.OUT), insn.finish()], [[0, 0]])]), "f", [new Uint8Array(64)]),
      "RUNTIME_ERROR",
      "instruction 0",
      "OUT",
    );
  });

  it("refuses an argument too small for the DRAM the program reads, naming the parameter", () => {
    const program = binaryOf([
      rawRun([insn.load(MEM.INP, { dramBase: 1, ySize: 2, xSize: 2, xStride: 4, pushNext: true }), insn.finish({ popPrev: true })], [[0, 0]]),
    ]);
    const need = (1 + 4 + 2) * hw.inpElemBytes;
    const err = rejects(
      () => runVtaFunction(program, "f", [new Uint8Array(need - 1)], { params: [{ name: "data", kind: "buffer" }] }),
      "BAD_ARGUMENTS",
      "data",
      String(need),
      "instruction 0",
    );
    assert.match(err.message, /argument 0/);
    // Exactly enough is fine.
    runVtaFunction(program, "f", [new Uint8Array(need)]);
  });

  it("refuses an absolute DRAM address outside the buffers placed for the call, naming the instruction", () => {
    const program = binaryOf([rawRun([insn.load(MEM.WGT, { dramBase: 1 << 24, pushNext: true }), insn.finish({ popPrev: true })])]);
    rejects(() => runVtaFunction(program, "f", [new Uint8Array(4096)]), "RUNTIME_ERROR", "instruction 0", "outside the buffers placed for this call");
    // Just past the end of the one argument (same page) is outside too.
    const E = hw.inpElemBytes;
    const past = binaryOf([rawRun([insn.load(MEM.INP, { dramBase: PAGE_BYTES / E + 4, pushNext: true }), insn.finish({ popPrev: true })])]);
    rejects(() => runVtaFunction(past, "f", [new Uint8Array(4 * E)]), "RUNTIME_ERROR", "instruction 0");
  });

  it("refuses a micro-op load past the run's micro-op buffer", () => {
    const program = binaryOf([
      rawRun(
        [insn.load(MEM.UOP, { dramBase: 1, xSize: 2 }), insn.finish()],
        [[0, UOP_BUFFER]],
        [
          { dst: 0, src: 0, wgt: 0 },
          { dst: 1, src: 0, wgt: 0 },
        ],
      ),
    ]);
    rejects(() => runVtaFunction(program, "f", []), "RUNTIME_ERROR", "instruction 0", "micro-op buffer");
  });
});
