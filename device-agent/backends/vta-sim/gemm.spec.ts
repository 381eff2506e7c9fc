/**
 * GEMM semantics: the micro-op loop nest with outer/inner factors, reset, the
 * counter rules, both engines against a plain reference, and index errors.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DEFAULT_VTA_HARDWARE as hw, MEM, UOP_BUFFER, type DepFlags, type GemmInsn, type Uop } from "../../../vta/index.ts";
import { FarmError } from "../../../protos/index.ts";
import { VtaSimulator, runVtaFunction, wasmGemmSupported, type GemmEngine } from "./index.ts";
import { binaryOf, insn, randomInt8, rawRun } from "./test-programs.ts";

const inpLanes = hw.batch * hw.blockIn;
const wgtLanes = hw.blockOut * hw.blockIn;
const accLanes = hw.batch * hw.blockOut;

/** A GEMM's loop nest: the instruction's iteration and factor fields. */
type Nest = Omit<GemmInsn, keyof DepFlags | "opcode" | "resetReg" | "uopBgn" | "uopEnd">;

/** docs/vta-isa.md §4, written out plainly. */
function referenceGemm(acc: Int32Array, inp: Int8Array, wgt: Int8Array, uops: Uop[], n: Nest): void {
  for (let y = 0; y < n.iterOut; y++) {
    for (let x = 0; x < n.iterIn; x++) {
      for (const u of uops) {
        const a = u.dst + y * n.dstFactorOut + x * n.dstFactorIn;
        const i = u.src + y * n.srcFactorOut + x * n.srcFactorIn;
        const w = u.wgt + y * n.wgtFactorOut + x * n.wgtFactorIn;
        for (let b = 0; b < hw.batch; b++) {
          for (let j = 0; j < hw.blockOut; j++) {
            let sum = acc[a * accLanes + b * hw.blockOut + j]!;
            for (let k = 0; k < hw.blockIn; k++) sum = (sum + inp[i * inpLanes + b * hw.blockIn + k]! * wgt[w * wgtLanes + j * hw.blockIn + k]!) | 0;
            acc[a * accLanes + b * hw.blockOut + j] = sum;
          }
        }
      }
    }
  }
}

/** LOAD INP, WGT (load module) → LOAD ACC, LOAD UOP, GEMM → FINISH, with the l2g token between them. */
function gemmProgram(uops: Uop[], nest: Nest, sizes: { inp: number; wgt: number; acc: number }, reset = false) {
  return binaryOf([
    rawRun(
      [
        insn.load(MEM.INP, { xSize: sizes.inp }),
        insn.load(MEM.WGT, { xSize: sizes.wgt, pushNext: true }),
        insn.load(MEM.ACC, { xSize: sizes.acc }),
        insn.load(MEM.UOP, { xSize: uops.length, xStride: uops.length }),
        insn.gemm({ ...nest, uopBgn: 0, uopEnd: uops.length, resetReg: reset, popPrev: true }),
        insn.finish(),
      ],
      [
        [0, 0],
        [1, 1],
        [2, 2],
        [3, UOP_BUFFER],
      ],
      uops,
    ),
  ]);
}

const engines: GemmEngine[] = wasmGemmSupported(hw) ? ["wasm-simd", "js"] : ["js"];

describe("GEMM", () => {
  const uops: Uop[] = [
    { dst: 0, src: 1, wgt: 2 },
    { dst: 3, src: 0, wgt: 0 },
    { dst: 1, src: 4, wgt: 5 },
  ];
  const nest: Nest = { iterOut: 2, iterIn: 3, dstFactorOut: 7, dstFactorIn: 2, srcFactorOut: 5, srcFactorIn: 1, wgtFactorOut: 3, wgtFactorIn: 1 };
  const sizes = { inp: 16, wgt: 12, acc: 16 };
  const inp = randomInt8(sizes.inp * inpLanes, 11);
  const wgt = randomInt8(sizes.wgt * wgtLanes, 12);
  const acc0 = Int32Array.from(randomInt8(sizes.acc * accLanes, 13), (v) => v * 65_537);

  for (const engine of engines) {
    it(`runs the micro-op loop nest with outer and inner factors (${engine} engine)`, () => {
      const sim = new VtaSimulator({ engine });
      assert.equal(sim.core.engine, engine);
      const r = runVtaFunction(gemmProgram(uops, nest, sizes), "f", [new Uint8Array(inp.buffer), new Uint8Array(wgt.buffer), new Uint8Array(acc0.buffer)], {
        simulator: sim,
      });
      const want = acc0.slice();
      referenceGemm(want, inp, wgt, uops, nest);
      assert.deepEqual([...sim.core.srams.acc.subarray(0, want.length)], [...want]);
      assert.equal(r.counters.gemm_counter, nest.iterOut * nest.iterIn * uops.length);
    });
  }

  for (const engine of engines) {
    it(`follows every LOAD of INP and WGT: reloads between GEMMs, padding, and buffers kept from an earlier call (${engine} engine)`, () => {
      // The wasm engine multiplies int16 copies of INP and WGT, refreshed at each LOAD: a stale copy would show here.
      const sim = new VtaSimulator({ engine });
      const nest2: Nest = { iterOut: 2, iterIn: 2, dstFactorOut: 4, dstFactorIn: 1, srcFactorOut: 0, srcFactorIn: 0, wgtFactorOut: 0, wgtFactorIn: 0 };
      const uops3: Uop[] = [
        { dst: 0, src: 0, wgt: 0 },
        { dst: 1, src: 2, wgt: 1 },
        { dst: 3, src: 4, wgt: 2 },
      ];
      const [inp1, inp2] = [randomInt8(4 * inpLanes, 21), randomInt8(5 * inpLanes, 22)];
      const [wgt1, wgt2] = [randomInt8(3 * wgtLanes, 23), randomInt8(1 * wgtLanes, 24)];
      const accIn = Int32Array.from(randomInt8(9 * accLanes, 25), (v) => v * 4099);
      const reloads = binaryOf([
        rawRun(
          [
            insn.load(MEM.INP, { xSize: 4, xStride: 4, xPad0: 1 }),
            insn.load(MEM.WGT, { xSize: 3, xStride: 3, pushNext: true }),
            insn.load(MEM.ACC, { xSize: 9, xStride: 9 }),
            insn.load(MEM.UOP, { xSize: 3, xStride: 3 }),
            insn.gemm({ ...nest2, uopEnd: 3, popPrev: true, pushPrev: true }),
            insn.load(MEM.INP, { xSize: 5, xStride: 5, popNext: true }),
            insn.load(MEM.WGT, { sramBase: 1, yPad0: 1, pushNext: true }),
            insn.gemm({ ...nest2, uopEnd: 3, popPrev: true }),
            insn.finish(),
          ],
          [
            [0, 0],
            [1, 1],
            [2, 2],
            [3, UOP_BUFFER],
            [5, 3],
            [6, 4],
          ],
          uops3,
        ),
      ]);
      const bytes = (a: Int8Array | Int32Array) => new Uint8Array(a.buffer);
      runVtaFunction(reloads, "f", [inp1, wgt1, accIn, inp2, wgt2].map(bytes), { simulator: sim });
      // The same, plainly: SRAM contents after each LOAD, and the two GEMMs on them.
      const inp = new Int8Array(5 * inpLanes);
      const wgt = new Int8Array(3 * wgtLanes);
      const want = accIn.slice();
      inp.set(inp1, inpLanes); // element 0 is x_pad_0
      wgt.set(wgt1);
      referenceGemm(want, inp, wgt, uops3, nest2);
      inp.set(inp2);
      wgt.fill(0, wgtLanes, 2 * wgtLanes); // y_pad_0 row
      wgt.set(wgt2, 2 * wgtLanes);
      referenceGemm(want, inp, wgt, uops3, nest2);
      assert.deepEqual([...sim.core.srams.acc.subarray(0, want.length)], [...want]);
      // A later call whose GEMM uses the INP and WGT this one left.
      runVtaFunction(
        binaryOf([rawRun([insn.load(MEM.UOP, { xSize: 3, xStride: 3 }), insn.gemm({ ...nest2, uopEnd: 3 }), insn.finish()], [[0, UOP_BUFFER]], uops3)]),
        "f",
        [],
        { simulator: sim },
      );
      referenceGemm(want, inp, wgt, uops3, nest2);
      assert.deepEqual([...sim.core.srams.acc.subarray(0, want.length)], [...want]);
    });
  }

  it("wraps int32 accumulation like the hardware", () => {
    const big = new Int32Array(accLanes).fill(2 ** 31 - 1);
    const ones = new Int8Array(inpLanes).fill(1);
    const w = new Int8Array(wgtLanes).fill(1);
    const sim = new VtaSimulator();
    const one = { iterOut: 1, iterIn: 1, dstFactorOut: 0, dstFactorIn: 0, srcFactorOut: 0, srcFactorIn: 0, wgtFactorOut: 0, wgtFactorIn: 0 };
    runVtaFunction(
      gemmProgram([{ dst: 0, src: 0, wgt: 0 }], one, { inp: 1, wgt: 1, acc: 1 }),
      "f",
      [new Uint8Array(ones.buffer), new Uint8Array(w.buffer), new Uint8Array(big.buffer)],
      { simulator: sim },
    );
    assert.equal(sim.core.srams.acc[0], -(2 ** 31) + hw.blockIn - 1);
  });

  it("with reset_reg zeroes the addressed accumulators only, and counts nothing", () => {
    const sim = new VtaSimulator();
    const resetNest: Nest = { ...nest, iterOut: 2, iterIn: 2, dstFactorOut: 8, dstFactorIn: 1 };
    const r = runVtaFunction(
      gemmProgram(
        [
          { dst: 0, src: 9, wgt: 9 },
          { dst: 4, src: 9, wgt: 9 },
        ],
        resetNest,
        sizes,
        true,
      ),
      "f",
      [new Uint8Array(inp.buffer), new Uint8Array(wgt.buffer), new Uint8Array(acc0.buffer)],
      { simulator: sim },
    );
    const zeroed = new Set([0, 1, 8, 9, 4, 5, 12, 13]);
    for (let e = 0; e < sizes.acc; e++) {
      const got = [...sim.core.srams.acc.subarray(e * accLanes, (e + 1) * accLanes)];
      assert.deepEqual(got, zeroed.has(e) ? new Array(accLanes).fill(0) : [...acc0.subarray(e * accLanes, (e + 1) * accLanes)], `ACC element ${e}`);
    }
    assert.equal(r.counters.gemm_counter, 0);
  });

  it("refuses a micro-op whose loop reaches past a buffer, naming the instruction and the micro-op", () => {
    const cases: [Uop, Partial<Nest>, string][] = [
      [{ dst: hw.accDepth - 1, src: 0, wgt: 0 }, { iterOut: 2, dstFactorOut: 1 }, "ACC"],
      [{ dst: 0, src: hw.inpDepth - 2, wgt: 0 }, { iterIn: 3, srcFactorIn: 1 }, "INP"],
      [{ dst: 0, src: 0, wgt: hw.wgtDepth - 1 }, { iterOut: 2, wgtFactorOut: 1 }, "WGT"],
    ];
    for (const [uop, n, buffer] of cases) {
      const program = binaryOf([
        rawRun([insn.load(MEM.UOP, { sramBase: 0 }), insn.gemm({ iterOut: 1, iterIn: 1, ...n }), insn.finish()], [[0, UOP_BUFFER]], [uop]),
      ]);
      let err: unknown;
      try {
        runVtaFunction(program, "f", []);
      } catch (e) {
        err = e;
      }
      assert.ok(err instanceof FarmError && err.code === "RUNTIME_ERROR", String(err));
      assert.ok(err.message.includes("instruction 1 (GEMM)") && err.message.includes("micro-op 0") && err.message.includes(`${buffer} SRAM`), err.message);
    }
  });

  it("refuses a micro-op range past the UOP buffer", () => {
    const program = binaryOf([rawRun([insn.gemm({ uopBgn: 1, uopEnd: hw.uopDepth + 1 }), insn.finish()])]);
    assert.throws(
      () => runVtaFunction(program, "f", []),
      (e: FarmError) => e.code === "RUNTIME_ERROR" && /instruction 0 \(GEMM\).*UOP buffer/.test(e.message),
    );
  });
});
