/**
 * The TVM tutorials' programs (built in test-programs.ts following the
 * runtime's rules; they equal the golden streams) produce the reference
 * outputs and exactly the statistics TVM's simulator printed (§2.8), and the
 * conv2d workload simulates at ≥ 1 G MAC/s.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DEFAULT_VTA_HARDWARE as hw } from "../../../vta/index.ts";
import { TVM_COUNTERS, VtaSimulator, runVtaFunction } from "./index.ts";
import { CONV2D, conv2dReference, conv2dTutorialProgram, matrixMultiplyProgram, randomInt8 } from "./test-programs.ts";

const bytes = (a: Int8Array) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
const tvm = (c: Record<string, number>) => Object.fromEntries(TVM_COUNTERS.map((k) => [k, c[k]]));

describe("tutorial workloads", () => {
  it("matrix_multiply: C = A·Bᵀ wrapped to int8, with TVM's statistics", () => {
    const a = randomInt8(256, 21);
    const b = randomInt8(256 * 256, 22);
    const r = runVtaFunction(matrixMultiplyProgram(), "matmul", [bytes(a), bytes(b), new Uint8Array(256)]);
    const c = new Int8Array(r.outputs[2]!.buffer);
    // Packed: A[n][k] = a[16n + k]; B element (m, n) holds [j][k]; C[m][j].
    for (let m = 0; m < 16; m++) {
      for (let j = 0; j < 16; j++) {
        let sum = 0;
        for (let n = 0; n < 16; n++) for (let k = 0; k < 16; k++) sum += a[16 * n + k]! * b[(m * 16 + n) * 256 + j * 16 + k]!;
        assert.equal(c[16 * m + j], (sum << 24) >> 24, `C[${m}][${j}]`);
      }
    }
    assert.deepEqual(tvm(r.counters), {
      inp_load_nbytes: 256, wgt_load_nbytes: 65536, acc_load_nbytes: 0, uop_load_nbytes: 8, out_store_nbytes: 256, gemm_counter: 256, alu_counter: 0,
    });
  });

  it("convolution_opt: ResNet-18 layer 9 equals the reference, with TVM's statistics, at ≥ 1 G MAC/s", () => {
    const data = randomInt8(50176, 31);
    const kernel = randomInt8(589824, 32);
    const sim = new VtaSimulator();
    const program = conv2dTutorialProgram();
    const run = () => runVtaFunction(program, "conv2d", [bytes(data), bytes(kernel), new Uint8Array(50176)], { simulator: sim });
    const r = run();
    assert.deepEqual(new Int8Array(r.outputs[2]!.buffer), conv2dReference(data, kernel));
    assert.deepEqual(tvm(r.counters), {
      inp_load_nbytes: 114688, wgt_load_nbytes: 1179648, acc_load_nbytes: 0, uop_load_nbytes: 1144, out_store_nbytes: 50176, gemm_counter: 451584, alu_counter: 9408,
    });
    assert.equal(r.counters.gemm_counter! * hw.batch * hw.blockIn * hw.blockOut, CONV2D.macs);
    // Speed: the best of a few warm runs (the machine may be shared).
    let bestNs = r.wallNs;
    for (let i = 0; i < 4; i++) bestNs = Math.min(bestNs, run().wallNs);
    const gmacs = CONV2D.macs / bestNs;
    assert.ok(gmacs >= 1, `simulated ${gmacs.toFixed(2)} G MAC/s (best of 5: ${(bestNs / 1e6).toFixed(1)} ms); the bar is 1 G MAC/s`);
  });
});
