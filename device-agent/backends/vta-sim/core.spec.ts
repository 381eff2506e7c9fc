/**
 * The compute core's two engines agree bit for bit: the generated wasm
 * kernels (GEMM, reset, every ALU variant) against the plain-JS reference,
 * on several block sizes and batches, random SRAM contents and loop nests
 * whose rows overlap.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ALU_OP, DEFAULT_VTA_HARDWARE, vtaHardware, type VtaHardware } from "../../../vta/index.ts";
import { createCore, wasmGemmSupported, type Core } from "./core.ts";
import { randomInt8 } from "./test-programs.ts";

const SHAPES: [logBatch: number, logBlock: number][] = [
  [0, 4],
  [1, 4],
  [2, 3],
  [0, 5],
  [1, 5],
];

/** Both engines for `hw`, their SRAMs filled alike from `seed` (the wasm engine told of every INP and WGT element, as loads do). */
function cores(hw: VtaHardware, seed: number): [Core, Core] {
  const pair = [createCore(hw, "wasm-simd"), createCore(hw, "js")] as [Core, Core];
  assert.deepEqual(
    pair.map((c) => c.engine),
    ["wasm-simd", "js"],
  );
  const inp = randomInt8(hw.inpDepth * hw.inpElemBytes, seed);
  const wgt = randomInt8(hw.wgtDepth * hw.wgtElemBytes, seed + 1);
  const acc = Int32Array.from(randomInt8(hw.accDepth * hw.batch * hw.blockOut, seed + 2), (v, i) => v * (i % 7 === 0 ? 16_777_259 : 3));
  for (const c of pair) {
    c.srams.inp.set(inp);
    c.srams.wgt.set(wgt);
    c.srams.acc.set(acc);
    c.inpWritten(0, hw.inpDepth);
    c.wgtWritten(0, hw.wgtDepth);
  }
  return pair;
}

/** Micro-ops 0..count-1 with fields from `seed`, every index below `span`. */
function setUops(pair: [Core, Core], count: number, span: number, seed: number): void {
  const r = randomInt8(3 * count, seed);
  for (const c of pair) {
    for (let u = 0; u < count; u++) {
      c.srams.uopDst[u] = (r[3 * u]! & 0x7f) % span;
      c.srams.uopSrc[u] = (r[3 * u + 1]! & 0x7f) % span;
      c.srams.uopWgt[u] = (r[3 * u + 2]! & 0x7f) % span;
    }
  }
}

function sameAcc(pair: [Core, Core], what: string): void {
  const [w, j] = pair.map((c) => c.srams.acc);
  const bad = w!.findIndex((v, i) => v !== j![i]);
  assert.equal(bad, -1, `${what}: ACC lane ${bad} is ${w![bad]} on wasm-simd, ${j![bad]} on js`);
}

describe("compute core engines", { skip: !wasmGemmSupported(DEFAULT_VTA_HARDWARE) && "no WebAssembly SIMD here" }, () => {
  for (const [logBatch, logBlock] of SHAPES) {
    const hw = vtaHardware({ ...DEFAULT_VTA_HARDWARE.config, logBatch, logBlock });
    it(`agree on GEMM, reset and every ALU operation (${hw.batch}×${hw.blockIn}, ${hw.blockOut} out)`, () => {
      const pair = cores(hw, 10 * logBatch + logBlock);
      setUops(pair, 7, 40, 3);
      // Factors that make rows repeat across iterations, so accumulation order and overlap matter.
      const nest = [7, 2, 3, 1, 2, 1] as const;
      for (const c of pair) c.gemm(0, 7, 3, 4, ...nest);
      sameAcc(pair, "GEMM");
      for (const c of pair) c.reset(2, 5, 2, 3, 5, 1);
      sameAcc(pair, "reset");
      for (const c of pair) c.gemm(1, 6, 2, 2, 1, 3, 0, 2, 1, 0);
      sameAcc(pair, "GEMM after reset");
      for (const [name, op] of Object.entries(ALU_OP)) {
        for (const imm of [0, 1, 5, 31, 33, -1, -7, 127, -128, 32767, -32768]) {
          for (const c of pair) c.alu(op, 1, imm, 0, 7, 2, 3, 4, 1, 0, 0);
          sameAcc(pair, `ALU ${name} imm ${imm}`);
        }
        // A second operand from ACC, with destination rows that later iterations read as operands.
        if (op === ALU_OP.SHR || op === ALU_OP.MUL) setUops(pair, 7, 40, 5); // fresh operands for the shifts and products
        for (const c of pair) c.alu(op, 0, 0, 0, 7, 2, 3, 1, 1, 1, 2);
        sameAcc(pair, `ALU ${name} with ACC operands`);
      }
      for (const c of pair) c.gemm(0, 7, 2, 2, 1, 1, 1, 1, 1, 1);
      sameAcc(pair, "GEMM after the ALU");
      // Micro-ops as compilers emit them: runs sharing weights, neighbours sharing a destination row.
      const DST = [0, 1, 1, 2, 3, 3, 4, 0, 0, 5, 6];
      for (const c of pair) {
        for (let u = 0; u < 23; u++) {
          c.srams.uopDst[u] = DST[u % DST.length]!;
          c.srams.uopSrc[u] = (u * 3) % 11;
          c.srams.uopWgt[u] = Math.floor(u / 3) % 5;
        }
      }
      for (const c of pair) c.gemm(0, 23, 2, 3, 9, 1, 2, 1, 1, 0);
      sameAcc(pair, "GEMM with shared weights");
      for (const c of pair) c.gemm(1, 22, 1, 2, 0, 0, 0, 0, 0, 1);
      sameAcc(pair, "GEMM with shared weights, every iteration on the same ACC rows");
    });
  }
});
