/**
 * The VTA host compiler's programs, run on the VTA simulator in-process
 * (device-agent's runVtaFunction): outputs equal the plain reference
 * implementations, and the simulator's counters equal what the compiler
 * derived from the instructions — for the tutorials and for other shapes and
 * schedules (channel counts, strides, paddings, 1 vs 2 virtual threads); the
 * conv2d tutorial simulates at ≥ 1 G MAC/s, and its cycle estimate shows
 * virtual threading's latency hiding.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  compileVta,
  conv2dOutputSize,
  elementwiseReference,
  VTA_CONV2D,
  VTA_MATRIX_MULTIPLY,
  VTA_MATRIX_MULTIPLY_BLOCKED,
  type VtaCompiledModule,
  type VtaConv2dSchedule,
  type VtaConv2dWorkload,
  type VtaElementwiseWorkload,
  type VtaKernelSpec,
} from "../host-sdk/index.ts";
import { VtaSimulator, runVtaFunction } from "../device-agent/backends/vta-sim/index.ts";
import { DEFAULT_VTA_HARDWARE as hw } from "../vta/index.ts";
import { conv2dCase, firstMismatch, matmulCase, randomInt8, type VtaCase } from "./helpers/vta.ts";

const TVM_COUNTERS = ["inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes", "uop_load_nbytes", "out_store_nbytes", "gemm_counter", "alu_counter"] as const;

const bytes = (a: Int8Array | Int32Array) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

function run(mod: VtaCompiledModule, args: readonly (Int8Array | Int32Array)[], sim?: VtaSimulator) {
  const name = mod.functions[0]!.name;
  const result = runVtaFunction(mod.program, name, args.map(bytes), sim ? { simulator: sim } : {});
  const counters = Object.fromEntries(TVM_COUNTERS.map((k) => [k, result.counters[k]]));
  assert.deepEqual(counters, mod.kernels[0]!.stats, "simulator counters = the compiler's static counts");
  return result;
}

/** Runs `c` on `mod` and checks the output against the reference; `again` runs it once more on the same simulator. */
function checkCase(mod: VtaCompiledModule, c: VtaCase, what: string, sim = new VtaSimulator()) {
  const args = [...c.inputs, new Int8Array(c.outLength)];
  const r = run(mod, args, sim);
  const out = r.outputs[2]!;
  assert.equal(firstMismatch(c.unpack(new Int8Array(out.buffer, out.byteOffset, c.outLength)), c.want), undefined, what);
  return { cycles: r.cycles, counters: r.counters, wallNs: r.wallNs, again: () => run(mod, args, sim) };
}

function checkConv(w: VtaConv2dWorkload, schedule?: Partial<VtaConv2dSchedule>, seed = 1) {
  const mod = compileVta({ kind: "conv2d", workload: w, ...(schedule ? { schedule } : {}) });
  return checkCase(mod, conv2dCase(w, seed), `conv2d ${JSON.stringify(w)} ${JSON.stringify(mod.kernels[0]!.schedule)}`);
}

function checkMatmul(spec: VtaKernelSpec & { kind: "matmul" }, calls = 1, seed = 3): void {
  const mod = compileVta(spec);
  const c = matmulCase(spec.workload, seed);
  const sim = new VtaSimulator();
  for (let call = 0; call < calls; call++) checkCase(mod, c, `matmul ${JSON.stringify(spec.workload)}, call ${call}`, sim);
}

describe("VTA compiler × simulator: the tutorials", () => {
  it("conv2d (ResNet-18 layer 9) equals the reference with TVM's statistics, simulated at ≥ 1 G MAC/s", () => {
    const w = VTA_CONV2D.workload;
    const r = checkConv(w, VTA_CONV2D.schedule, 11);
    const { outHeight, outWidth } = conv2dOutputSize(w);
    const macs = w.batch * w.outChannels * outHeight * outWidth * w.inChannels * w.kernelH * w.kernelW;
    assert.equal(macs, 115_605_504);
    assert.equal(r.counters.gemm_counter! * hw.batch * hw.blockIn * hw.blockOut, macs, "one GEMM execution = one BATCH×BLOCK_IN×BLOCK_OUT block of MACs");
    // Speed: the best of a few warm runs (the machine may be shared).
    let bestNs = r.wallNs;
    for (let i = 0; i < 4; i++) bestNs = Math.min(bestNs, r.again().wallNs);
    const gmacs = macs / bestNs;
    assert.ok(gmacs >= 1, `simulated ${gmacs.toFixed(2)} G MAC/s (best of 5: ${(bestNs / 1e6).toFixed(1)} ms); the bar is 1 G MAC/s`);
  });

  it("conv2d on 1 and 2 virtual threads: the same work, and 2 threads hide load latency in the cycle estimate", () => {
    const args = [new Int8Array(50176), new Int8Array(589824), new Int8Array(50176)];
    const [one, two] = ([1, 2] as const).map((virtualThreads) =>
      run(compileVta({ ...VTA_CONV2D, schedule: { ...VTA_CONV2D.schedule, virtualThreads } }), args),
    );
    for (const k of ["inp_load_nbytes", "wgt_load_nbytes", "out_store_nbytes", "gemm_counter", "alu_counter"])
      assert.equal(two!.counters[k], one!.counters[k], k);
    assert.ok(two!.cycles < one!.cycles, `2 threads: ${two!.cycles} cycles, 1 thread: ${one!.cycles}`);
    // Same busy time of the load module (same transfers); only the overlap differs.
    assert.equal(two!.counters.load_busy_cycles, one!.counters.load_busy_cycles);
    assert.ok(two!.cycles >= Math.max(two!.counters.load_busy_cycles!, two!.counters.compute_busy_cycles!, two!.counters.store_busy_cycles!));
  });

  it("matrix multiply, simple and blocked; the blocked one stays right when called again", () => {
    checkMatmul(VTA_MATRIX_MULTIPLY);
    checkMatmul(VTA_MATRIX_MULTIPLY_BLOCKED, 3);
  });

  it('TVM\'s first-call stream (trailingPops "carry") leaves a token behind: refused, naming the queue and the count, and the next call is right', () => {
    const carry = compileVta(VTA_MATRIX_MULTIPLY_BLOCKED, { trailingPops: "carry" });
    const c = matmulCase(VTA_MATRIX_MULTIPLY_BLOCKED.workload, 3);
    const sim = new VtaSimulator();
    const args = [...c.inputs, new Int8Array(c.outLength)].map(bytes);
    assert.throws(
      () => runVtaFunction(carry.program, carry.functions[0]!.name, args, { simulator: sim }),
      (e: Error & { code?: string }) =>
        e.code === "RUNTIME_ERROR" && /its last FINISH left dependency tokens behind — 1 on s2g \(store → compute\)/.test(e.message),
    );
    // Called again on the same board: the leftover token is gone, so the committed module is still right.
    checkCase(compileVta(VTA_MATRIX_MULTIPLY_BLOCKED), c, "the committed stream after a refused carry", sim);
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
    checkConv(
      { ...base, batch: 2, inChannels: 32, outChannels: 64, height: 4, width: 6 },
      { ocBlock: 1, icBlock: 1, hBlock: 2, wBlock: 3, virtualThreads: 2, storeGranularity: "element" },
      39,
    );
    // Outputs too narrow for the tutorial's x-innermost uops (2×2, 1×1).
    checkConv({ ...base, inChannels: 16, outChannels: 48, height: 2, width: 2 }, undefined, 37);
    checkConv({ ...base, height: 3, width: 3, padH: 0, padW: 0 }, { virtualThreads: 1, ocBlock: 2 }, 38);
  });

  it("unpadded input tiles loaded as TVM folds them (one row, blocks at an even stride, rows at an even stride) compute the same", () => {
    const w = { ...base, batch: 2, inChannels: 48, outChannels: 32, height: 10, width: 10, padH: 0, padW: 0 };
    const s = { ocBlock: 1, icBlock: 3, virtualThreads: 2, storeGranularity: "row" } as const;
    for (const [hBlock, wBlock, seed] of [
      [8, 8, 71],
      [4, 8, 72],
      [8, 4, 73],
      [4, 4, 74],
    ] as const)
      checkConv(w, { ...s, hBlock, wBlock }, seed);
  });

  it("GEMM kernels too large to share the uop buffer are evicted and reloaded, and still compute the right thing", () => {
    // Two threads' 7×7 kernels of 5978 uops each cannot both stay in the 8192-entry uop buffer.
    const w: VtaConv2dWorkload = {
      batch: 1,
      inChannels: 16,
      outChannels: 64,
      height: 4,
      width: 122,
      kernelH: 7,
      kernelW: 7,
      padH: 3,
      padW: 3,
      shift: 9,
      clip: [0, 127],
    };
    const s: VtaConv2dSchedule = { ocBlock: 2, icBlock: 1, hBlock: 2, wBlock: 122, virtualThreads: 2, storeGranularity: "channel" };
    const info = compileVta({ kind: "conv2d", workload: w, schedule: s }).kernels[0]!;
    // 2 row tiles × 2 threads: every GEMM finds its kernel evicted by the other thread's and loads it again.
    assert.ok(info.stats.uop_load_nbytes >= 4 * 5978 * 4, `uop loads: ${info.stats.uop_load_nbytes} B`);
    checkConv(w, s, 36);
  });

  it("matmul with batch blocks, virtual threads and an epilogue", () => {
    checkMatmul(
      {
        kind: "matmul",
        workload: { batch: 4, inFeatures: 64, outFeatures: 96, shift: 5, clip: [-100, 100] },
        schedule: { batchBlock: 2, inBlock: 2, outBlock: 3, virtualThreads: 2, storeGranularity: "element" },
      },
      2,
      41,
    );
    checkMatmul({ kind: "matmul", workload: { batch: 3, inFeatures: 48, outFeatures: 32 } }, 1, 42);
    // TVM's GEMM order, the batch in the outer uop loop.
    checkMatmul(
      {
        kind: "matmul",
        workload: { batch: 4, inFeatures: 32, outFeatures: 64, shift: 3, clip: [-50, 90] },
        schedule: { batchBlock: 4, inBlock: 1, outBlock: 2, virtualThreads: 2, storeGranularity: "tile" },
      },
      2,
      43,
    );
  });

  it("element-wise chains with immediates, int8 inputs and several tiles", () => {
    const cases: VtaElementwiseWorkload[] = [
      {
        length: 512,
        ops: [
          { op: "max", rhs: "b" },
          { op: "shr", imm: 2 },
          { op: "add", imm: -3 },
        ],
      },
      {
        length: 256,
        inputDtype: "int8",
        ops: [
          { op: "shl", imm: 1 },
          { op: "min", imm: 100 },
          { op: "max", imm: -100 },
        ],
      },
      {
        length: 16 * 3000,
        ops: [
          { op: "min", rhs: "b" },
          { op: "mul", imm: 3 },
        ],
      },
    ];
    for (const [k, w] of cases.entries()) {
      const mod = compileVta({ kind: "elementwise", workload: w });
      const binary = w.ops.some((o) => "rhs" in o);
      const mk = (seed: number) =>
        w.inputDtype === "int8" ? randomInt8(w.length, seed) : Int32Array.from(randomInt8(w.length, seed), (v, i) => v * 300 + (i % 7));
      const a = mk(50 + k);
      const b = binary ? mk(60 + k) : undefined;
      const r = run(mod, [a, ...(b ? [b] : []), new Int8Array(w.length)]);
      const out = r.outputs[binary ? 2 : 1]!;
      assert.equal(firstMismatch(new Int8Array(out.buffer, out.byteOffset, w.length), elementwiseReference(a, b, w)), undefined, JSON.stringify(w.ops));
    }
  });
});
