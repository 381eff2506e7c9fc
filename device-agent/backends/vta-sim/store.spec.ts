/** STORE semantics: ACC → OUT with int8 truncation, 2D strides, and its errors. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DEFAULT_VTA_HARDWARE as hw, MEM } from "../../../vta/index.ts";
import { FarmError } from "../../../protos/index.ts";
import { runVtaFunction } from "./index.ts";
import { binaryOf, insn, rawRun } from "./test-programs.ts";

const lanes = hw.batch * hw.blockOut;

/** LOAD ACC of `values` into ACC 0.., then `store`, with the tokens a compute→store hand-off needs. */
function storeProgram(store: Parameters<typeof insn.store>[0], accElems: number) {
  return binaryOf([
    rawRun(
      [insn.load(MEM.ACC, { xSize: accElems, pushNext: true }), insn.store({ ...store, popPrev: true, pushPrev: true }), insn.finish({ popNext: true })],
      [
        [0, 0],
        [1, 1],
      ],
    ),
  ]);
}

describe("STORE", () => {
  it("writes ACC rows to strided OUT elements, keeping the low 8 bits of each lane", () => {
    const acc = Int32Array.from({ length: 4 * lanes }, (_, i) => [300, -129, 127, -1, 128, 256, -256, 0x12345678, -(2 ** 31)][i % 9]! + (i >> 4));
    const out = new Uint8Array(8 * hw.outElemBytes).fill(0x77);
    const r = runVtaFunction(storeProgram({ sramBase: 0, dramBase: 1, xSize: 2, ySize: 2, xStride: 3 }, 4), "f", [new Uint8Array(acc.buffer), out]);
    const got = new Int8Array(r.outputs[1]!.buffer);
    // ACC element y·x_size + x → OUT element dram_base + y·x_stride + x.
    const placed = new Map([
      [1, 0],
      [2, 1],
      [4, 2],
      [5, 3],
    ]);
    for (let e = 0; e < 8; e++) {
      for (let k = 0; k < lanes; k++) {
        const from = placed.get(e);
        const low8 = from === undefined ? 0x77 : acc[from * lanes + k]! & 0xff;
        assert.equal(got[e * lanes + k], low8 >= 128 ? low8 - 256 : low8, `OUT element ${e} lane ${k}`);
      }
    }
    assert.equal(r.counters.out_store_nbytes, 4 * hw.outElemBytes);
  });

  it("refuses padding, a memory type other than OUT, and an ACC range past the buffer, naming the instruction", () => {
    const cases: [Parameters<typeof insn.store>[0], string][] = [
      [{ xPad0: 1 }, "cannot pad"],
      [{ memoryType: MEM.INP }, "OUT"],
      [{ sramBase: hw.accDepth - 1, xSize: 2 }, `${hw.accDepth}`],
    ];
    for (const [f, fragment] of cases) {
      let err: unknown;
      try {
        runVtaFunction(storeProgram(f, 1), "f", [new Uint8Array(hw.accElemBytes), new Uint8Array(4 * hw.outElemBytes)]);
      } catch (e) {
        err = e;
      }
      assert.ok(err instanceof FarmError && err.code === "RUNTIME_ERROR", String(err));
      assert.ok(err.message.includes("instruction 1 (STORE)") && err.message.includes(fragment), err.message);
    }
  });

  it("treats x_size 0 as a NOP-STORE whose tokens still flow", () => {
    const out = new Uint8Array(hw.outElemBytes).fill(5);
    const r = runVtaFunction(storeProgram({ xSize: 0, memoryType: MEM.UOP }, 1), "f", [new Uint8Array(hw.accElemBytes), out]);
    assert.ok(r.outputs[1]!.every((b) => b === 5));
    assert.equal(r.counters.out_store_nbytes, 0);
  });
});
