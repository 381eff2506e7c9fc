/**
 * The VTA host compiler's programs, run on the VTA simulator in-process
 * (device-agent's runVtaFunction): outputs equal the plain reference
 * implementations, and the simulator's counters equal what the compiler
 * derived from the instructions — for the tutorials and for other shapes and
 * schedules (channel counts, strides, paddings, 1 vs 2 virtual threads).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  compileVta, conv2dOutputSize, conv2dReference, elementwiseReference, matmulReference,
  packMatmulInput, packMatmulWeight, packNCHW, packOIHW, unpackMatmulOutput, unpackNCHW,
  VTA_CONV2D, VTA_MATRIX_MULTIPLY, VTA_MATRIX_MULTIPLY_BLOCKED,
  type VtaCompiledModule, type VtaConv2dSchedule, type VtaConv2dWorkload, type VtaElementwiseWorkload, type VtaKernelSpec, type VtaMatmulWorkload,
} from "../host-sdk/index.ts";
import { VtaSimulator, runVtaFunction } from "../device-agent/backends/vta-sim/index.ts";

const TVM_COUNTERS = ["inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes", "uop_load_nbytes", "out_store_nbytes", "gemm_counter", "alu_counter"] as const;

/** Deterministic int8 data: a small LCG, so a failure reproduces. */
function randomInt8(n: number, seed: number, lo = -128, hi = 127): Int8Array {
  let x = seed >>> 0 || 1;
  const out = new Int8Array(n);
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    out[i] = lo + (x >>> 8) % (hi - lo + 1);
  }
  return out;
}

const bytes = (a: Int8Array | Int32Array) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

function run(mod: VtaCompiledModule, args: (Int8Array | Int32Array)[], sim?: VtaSimulator) {
  const name = mod.functions[0]!.name;
  const result = runVtaFunction(mod.program, name, args.map(bytes), sim ? { simulator: sim } : {});
  const counters = Object.fromEntries(TVM_COUNTERS.map((k) => [k, result.counters[k]]));
  assert.deepEqual(counters, mod.kernels[0]!.stats, "simulator counters = the compiler's static counts");
  return result;
}

function firstMismatch(a: Int8Array, b: Int8Array): string | undefined {
  if (a.length !== b.length) return `lengths ${a.length} vs ${b.length}`;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return `element ${i}: ${a[i]} vs reference ${b[i]}`;
  return undefined;
}

function checkConv(w: VtaConv2dWorkload, schedule?: Partial<VtaConv2dSchedule>, seed = 1): { cycles: number } {
  const mod = compileVta({ kind: "conv2d", workload: w, ...(schedule ? { schedule } : {}) });
  const { outHeight: OH, outWidth: OW } = conv2dOutputSize(w);
  const data = randomInt8(w.batch * w.inChannels * w.height * w.width, seed);
  const kernel = randomInt8(w.outChannels * w.inChannels * w.kernelH * w.kernelW, seed + 1);
  const out = new Int8Array(w.batch * w.outChannels * OH * OW);
  const r = run(mod, [packNCHW(data, [w.batch, w.inChannels, w.height, w.width]), packOIHW(kernel, [w.outChannels, w.inChannels, w.kernelH, w.kernelW]), out]);
  const got = unpackNCHW(new Int8Array(r.outputs[2]!.buffer, r.outputs[2]!.byteOffset, out.length), [w.batch, w.outChannels, OH, OW]);
  const want = conv2dReference(data, kernel, w);
  assert.equal(firstMismatch(got, want), undefined, `conv2d ${JSON.stringify(w)} ${JSON.stringify(mod.kernels[0]!.schedule)}`);
  return { cycles: r.cycles };
}

function checkMatmul(spec: VtaKernelSpec & { kind: "matmul" }, calls = 1, seed = 3): void {
  const mod = compileVta(spec);
  const w: VtaMatmulWorkload = spec.workload;
  const a = randomInt8(w.batch * w.inFeatures, seed);
  const wt = randomInt8(w.outFeatures * w.inFeatures, seed + 1);
  const want = matmulReference(a, wt, w);
  const sim = new VtaSimulator();
  for (let call = 0; call < calls; call++) {
    const out = new Int8Array(w.batch * w.outFeatures);
    const r = run(mod, [packMatmulInput(a, w.batch, w.inFeatures), packMatmulWeight(wt, w.outFeatures, w.inFeatures), out], sim);
    const got = unpackMatmulOutput(new Int8Array(r.outputs[2]!.buffer, r.outputs[2]!.byteOffset, out.length), w.batch, w.outFeatures);
    assert.equal(firstMismatch(got, want), undefined, `matmul ${JSON.stringify(w)}, call ${call}`);
  }
}

describe("VTA compiler × simulator: the tutorials", () => {
  it("conv2d (ResNet-18 layer 9) equals the reference with TVM's statistics", () => {
    checkConv(VTA_CONV2D.workload, VTA_CONV2D.schedule, 11);
  });

  it("matrix multiply, simple and blocked; the blocked one stays right when called again", () => {
    checkMatmul(VTA_MATRIX_MULTIPLY);
    checkMatmul(VTA_MATRIX_MULTIPLY_BLOCKED, 3);
  });

  it("vector add", () => {
    const w: VtaElementwiseWorkload = { length: 1024, ops: [{ op: "add", rhs: "b" }] };
    const mod = compileVta({ kind: "elementwise", name: "vector_add", workload: w });
    const a = Int32Array.from(randomInt8(1024, 5), (v, i) => v * 1000 + i);
    const b = Int32Array.from(randomInt8(1024, 6), (v) => v * 77);
    const r = run(mod, [a, b, new Int8Array(1024)]);
    assert.equal(firstMismatch(new Int8Array(r.outputs[2]!.buffer, r.outputs[2]!.byteOffset, 1024), elementwiseReference(a, b, w)), undefined);
  });
});

describe("VTA compiler × simulator: other shapes and schedules", () => {
  const base = { batch: 1, inChannels: 32, outChannels: 32, height: 8, width: 8, kernelH: 3, kernelW: 3, padH: 1, padW: 1, shift: 6, clip: [0, 127] as const };

  it("1 vs 2 virtual threads, and the latency hiding shows in the cycle estimate", () => {
    const s: Partial<VtaConv2dSchedule> = { ocBlock: 1, icBlock: 1, hBlock: 4, wBlock: 8, storeGranularity: "channel" };
    const one = checkConv(base, { ...s, virtualThreads: 1 }, 21);
    const two = checkConv(base, { ...s, virtualThreads: 2 }, 21);
    assert.ok(two.cycles < one.cycles, `2 threads: ${two.cycles} cycles, 1 thread: ${one.cycles}`);
  });

  it("strides, paddings, kernel sizes, channel counts and batch", () => {
    checkConv({ ...base, strideH: 2, strideW: 2, height: 9, width: 9 }, { virtualThreads: 2, storeGranularity: "row" }, 31);
    checkConv({ ...base, padH: 2, padW: 0, kernelH: 5, kernelW: 3, height: 6, width: 7, shift: 0, clip: null }, { icBlock: 2 }, 32);
    checkConv({ ...base, inChannels: 48, outChannels: 16, kernelH: 1, kernelW: 1, padH: 0, padW: 0 }, { storeGranularity: "element" }, 33);
    checkConv({ ...base, batch: 2, outChannels: 64, height: 5, width: 6, clip: [-20, 50] }, { virtualThreads: 2, ocBlock: 2 }, 34);
    checkConv({ ...base, strideW: 3, width: 12, padW: 2, kernelW: 4 }, undefined, 35);
    // Every loop of the nest live at once: batch, output-channel tiles, row and column tiles, input-channel steps.
    checkConv({ ...base, batch: 2, inChannels: 32, outChannels: 64, height: 4, width: 6 }, { ocBlock: 1, icBlock: 1, hBlock: 2, wBlock: 3, virtualThreads: 2, storeGranularity: "element" }, 39);
    // Outputs too narrow for the tutorial's x-innermost uops (2×2, 1×1).
    checkConv({ ...base, inChannels: 16, outChannels: 48, height: 2, width: 2 }, undefined, 37);
    checkConv({ ...base, height: 3, width: 3, padH: 0, padW: 0 }, { virtualThreads: 1, ocBlock: 2 }, 38);
  });

  it("GEMM kernels too large to share the uop buffer are evicted and reloaded, and still compute the right thing", () => {
    // Two threads' 7×7 kernels of 5978 uops each cannot both stay in the 8192-entry uop buffer.
    const w: VtaConv2dWorkload = { batch: 1, inChannels: 16, outChannels: 64, height: 4, width: 122, kernelH: 7, kernelW: 7, padH: 3, padW: 3, shift: 9, clip: [0, 127] };
    const s: VtaConv2dSchedule = { ocBlock: 2, icBlock: 1, hBlock: 2, wBlock: 122, virtualThreads: 2, storeGranularity: "channel" };
    const info = compileVta({ kind: "conv2d", workload: w, schedule: s }).kernels[0]!;
    // 2 row tiles × 2 threads: every GEMM finds its kernel evicted by the other thread's and loads it again.
    assert.ok(info.stats.uop_load_nbytes >= 4 * 5978 * 4, `uop loads: ${info.stats.uop_load_nbytes} B`);
    checkConv(w, s, 36);
  });

  it("matmul with batch blocks, virtual threads and an epilogue", () => {
    checkMatmul({ kind: "matmul", workload: { batch: 4, inFeatures: 64, outFeatures: 96, shift: 5, clip: [-100, 100] }, schedule: { batchBlock: 2, inBlock: 2, outBlock: 3, virtualThreads: 2, storeGranularity: "element" } }, 2, 41);
    checkMatmul({ kind: "matmul", workload: { batch: 3, inFeatures: 48, outFeatures: 32 } }, 1, 42);
  });

  it("element-wise chains with immediates, int8 inputs and several tiles", () => {
    const cases: VtaElementwiseWorkload[] = [
      { length: 512, ops: [{ op: "max", rhs: "b" }, { op: "shr", imm: 2 }, { op: "add", imm: -3 }] },
      { length: 256, inputDtype: "int8", ops: [{ op: "shl", imm: 1 }, { op: "min", imm: 100 }, { op: "max", imm: -100 }] },
      { length: 16 * 3000, ops: [{ op: "min", rhs: "b" }, { op: "mul", imm: 3 }] },
    ];
    for (const [k, w] of cases.entries()) {
      const mod = compileVta({ kind: "elementwise", workload: w });
      const binary = w.ops.some((o) => "rhs" in o);
      const mk = (seed: number) => (w.inputDtype === "int8" ? randomInt8(w.length, seed) : Int32Array.from(randomInt8(w.length, seed), (v, i) => v * 300 + (i % 7)));
      const a = mk(50 + k);
      const b = binary ? mk(60 + k) : undefined;
      const r = run(mod, [a, ...(b ? [b] : []), new Int8Array(w.length)]);
      const out = r.outputs[binary ? 2 : 1]!;
      assert.equal(firstMismatch(new Int8Array(out.buffer, out.byteOffset, w.length), elementwiseReference(a, b, w)), undefined, JSON.stringify(w.ops));
    }
  });
});
