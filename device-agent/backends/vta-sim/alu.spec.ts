/** ALU semantics: each opcode with an immediate and with an ACC operand, loop nests, counting, errors. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ALU_OP, DEFAULT_VTA_HARDWARE as hw, MEM, UOP_BUFFER, type AluOpcode, type Uop } from "../../../vta/index.ts";
import type { FarmError } from "../../../protos/index.ts";
import { VtaSimulator, runVtaFunction, wasmGemmSupported, type GemmEngine } from "./index.ts";
import { binaryOf, insn, rawRun } from "./test-programs.ts";

const lanes = hw.batch * hw.blockOut;
const INT32_MAX = 2 ** 31 - 1;
const INT32_MIN = -(2 ** 31);

/** Values exercising signs, overflow and shifts. */
const VALUES = [0, 1, -1, 7, -7, 1000, -1000, 123_456_789, -987_654_321, INT32_MAX, INT32_MIN, 255, -256, 65_536, 3, -2];

/** Plain int32 reference of each opcode (SHR: a negative amount shifts left). */
function reference(op: AluOpcode, a: number, b: number): number {
  const wrap = (v: bigint) => Number(BigInt.asIntN(32, v));
  switch (op) {
    case ALU_OP.MIN:
      return Math.min(a, b);
    case ALU_OP.MAX:
      return Math.max(a, b);
    case ALU_OP.ADD:
      return wrap(BigInt(a) + BigInt(b));
    case ALU_OP.MUL:
      return wrap(BigInt(a) * BigInt(b));
    case ALU_OP.SHR: {
      const n = BigInt(Math.abs(b) % 32);
      return b >= 0 ? wrap(BigInt(a) >> n) : wrap(BigInt(a) << n);
    }
  }
  throw new Error(`no opcode ${op}`);
}

/** ACC 0..7 ← data; then `alu` with `uops` on `engine`; the ACC SRAM afterwards and the counters. */
function runAlu(data: Int32Array, uops: Uop[], alu: Parameters<typeof insn.alu>[1] & { op: AluOpcode }, engine: GemmEngine) {
  const sim = new VtaSimulator({ engine });
  const { op, ...fields } = alu;
  const program = binaryOf([
    rawRun(
      [
        insn.load(MEM.ACC, { xSize: data.length / lanes }),
        insn.load(MEM.UOP, { xSize: uops.length, xStride: uops.length }),
        insn.alu(op, { uopBgn: 0, uopEnd: uops.length, ...fields }),
        insn.finish(),
      ],
      [
        [0, 0],
        [1, UOP_BUFFER],
      ],
      uops,
    ),
  ]);
  const r = runVtaFunction(program, "f", [new Uint8Array(data.buffer)], { simulator: sim });
  return { acc: sim.core.srams.acc.slice(0, data.length), counters: r.counters };
}

const OPS: [string, AluOpcode][] = [
  ["MIN", ALU_OP.MIN],
  ["MAX", ALU_OP.MAX],
  ["ADD", ALU_OP.ADD],
  ["SHR", ALU_OP.SHR],
  ["MUL", ALU_OP.MUL],
];
const engines: GemmEngine[] = wasmGemmSupported(hw) ? ["wasm-simd", "js"] : ["js"];

describe("ALU", () => {
  // ACC rows 0..3 hold VALUES rotated; rows 4..7 hold the second operands.
  const data = new Int32Array(8 * lanes);
  for (let e = 0; e < 8; e++) for (let k = 0; k < lanes; k++) data[e * lanes + k] = VALUES[(e * 5 + k) % VALUES.length]!;
  // Keep shift amounts meaningful: the second operands of a SHR are small, of both signs.
  const shifts = data.slice();
  for (let i = 4 * lanes; i < 8 * lanes; i++) shifts[i] = (i % 19) - 9;

  for (const engine of engines) {
    for (const [name, op] of OPS) {
      for (const imm of op === ALU_OP.SHR ? [0, 8, 31, -3] : [0, 127, -5, -32768, 32767]) {
        it(`${name} with immediate ${imm} (${engine} engine)`, () => {
          const { acc, counters } = runAlu(data, [{ dst: 0, src: 0, wgt: 0 }], { op, iterIn: 4, dstFactorIn: 1, useImm: true, imm }, engine);
          for (let i = 0; i < 4 * lanes; i++) assert.equal(acc[i], reference(op, data[i]!, imm), `lane ${i}: ${name}(${data[i]}, ${imm})`);
          assert.deepEqual([...acc.subarray(4 * lanes)], [...data.subarray(4 * lanes)], "rows past the loop are untouched");
          assert.equal(counters.alu_counter, 4);
        });
      }
      it(`${name} with a second operand from ACC (${engine} engine)`, () => {
        const input = op === ALU_OP.SHR ? shifts : data;
        const { acc, counters } = runAlu(input, [{ dst: 0, src: 4, wgt: 0 }], { op, iterIn: 4, dstFactorIn: 1, srcFactorIn: 1 }, engine);
        for (let i = 0; i < 4 * lanes; i++) assert.equal(acc[i], reference(op, input[i]!, input[i + 4 * lanes]!), `lane ${i}`);
        assert.equal(counters.alu_counter, 4);
      });
      it(`${name} reads rows earlier iterations wrote, and a row that is its own operand (${engine} engine)`, () => {
        const input = op === ALU_OP.SHR ? shifts : data;
        // Row r + 1 = op(row r + 1, row r) for r = 0..2, in order: each step sees the one before; then row 5 = op(row 5, row 5).
        const { acc } = runAlu(input, [{ dst: 1, src: 0, wgt: 0 }], { op, iterIn: 3, dstFactorIn: 1, srcFactorIn: 1 }, engine);
        const want = input.slice();
        for (let r = 0; r < 3; r++) for (let k = 0; k < lanes; k++) want[(r + 1) * lanes + k] = reference(op, want[(r + 1) * lanes + k]!, want[r * lanes + k]!);
        assert.deepEqual([...acc], [...want]);
        const self = runAlu(input, [{ dst: 5, src: 5, wgt: 0 }], { op }, engine).acc;
        for (let k = 0; k < lanes; k++) assert.equal(self[5 * lanes + k], reference(op, input[5 * lanes + k]!, input[5 * lanes + k]!), `lane ${k}`);
      });
    }
  }

  it("runs two loops and several micro-ops, counting iter_out × iter_in × uops", () => {
    // dst = u.dst + 2y + x over y<2, x<2 → rows 0..3 from uop 0 and 4..7 from uop 1; each adds 1.
    const { acc, counters } = runAlu(
      data,
      [
        { dst: 0, src: 0, wgt: 0 },
        { dst: 4, src: 0, wgt: 0 },
      ],
      {
        op: ALU_OP.ADD,
        iterOut: 2,
        iterIn: 2,
        dstFactorOut: 2,
        dstFactorIn: 1,
        useImm: true,
        imm: 1,
      },
      engines[0]!,
    );
    for (let i = 0; i < 8 * lanes; i++) assert.equal(acc[i], reference(ALU_OP.ADD, data[i]!, 1));
    assert.equal(counters.alu_counter, 2 * 2 * 2);
    assert.equal(counters.gemm_counter, 0);
  });

  it("refuses an unknown ALU opcode and an ACC index past the buffer, naming the instruction", () => {
    const bad = binaryOf([rawRun([insn.finish(), insn.alu(6 as AluOpcode)])]);
    assert.throws(
      () => runVtaFunction(bad, "f", []),
      (e: FarmError) => e.code === "RUNTIME_ERROR" && /instruction 1 .*unknown ALU opcode 6/.test(e.message),
    );
    const far = binaryOf([
      rawRun(
        [insn.load(MEM.UOP), insn.alu(ALU_OP.MAX, { iterIn: 2, srcFactorIn: 1 }), insn.finish()],
        [[0, UOP_BUFFER]],
        [{ dst: 0, src: hw.accDepth - 1, wgt: 0 }],
      ),
    ]);
    assert.throws(
      () => runVtaFunction(far, "f", []),
      (e: FarmError) => e.code === "RUNTIME_ERROR" && /instruction 1 \(ALU MAX\).*micro-op 0.*ACC SRAM index/.test(e.message),
    );
  });
});
