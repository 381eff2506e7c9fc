import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FarmError, decodeBundle } from "../../protos/index.ts";
import { VtaCommandQueue, checkDependencies, decodeRun, decodeVtaBinary, runToStream, vtaHardware, DEFAULT_VTA_CONFIG } from "../../vta/index.ts";
import { compileVta, lowerVtaKernel, type VtaKernelSpec } from "./compile.ts";
import { planCoprocSync } from "./coproc-sync.ts";
import type { VtaConv2dSchedule, VtaConv2dWorkload } from "./conv2d.ts";
import { runLowered } from "./lowered.ts";
import { loop, scope, seq } from "./stmt.ts";
import { aluLoops } from "./uop-nest.ts";
import { dma2d } from "./dma.ts";
import { vtaConv2d, vtaElementwise, vtaMatmul, vtaVectorAdd } from "./index.ts";
import { VTA_CONV2D } from "./tutorials.ts";

function expectFarmError(fn: () => unknown, code: string, pattern: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof FarmError, `expected FarmError, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    assert.match(err.message, pattern);
    return true;
  });
}

describe("coproc sync planning", () => {
  const L = (label: string, trace: string[]) => scope(1, label, () => void trace.push(label));
  const C = (label: string, trace: string[]) => scope(2, label, () => void trace.push(label));
  const S = (label: string, trace: string[]) => scope(3, label, () => void trace.push(label));

  it("links consecutive scopes of different queues, loop-carried pairs included", () => {
    const t: string[] = [];
    const cmd = new VtaCommandQueue();
    const ops: string[] = t;
    cmd.depPush = (f, to) => void ops.push(`push(${f}→${to})`);
    cmd.depPop = (f, to) => void ops.push(`pop(${f}→${to})`);
    cmd.synchronize = () => (ops.push("sync"), { insns: new Uint8Array(0), uops: new Uint8Array(0), relocations: [] });
    // The simple matmul tutorial: reset; for ko { load; gemm }; store.
    runLowered(seq(C("reset", t), loop("ko", 2, seq(L("load", t), C("gemm", t))), S("store", t)), cmd, { threads: 1, trailingPops: "carry" });
    assert.deepEqual(t, [
      "reset",
      "push(2→1)",
      "pop(2→1)",
      "load",
      "push(1→2)",
      "pop(1→2)",
      "gemm",
      "push(2→1)",
      "pop(2→1)",
      "load",
      "push(1→2)",
      "pop(1→2)",
      "gemm",
      "push(2→1)",
      "push(2→3)",
      "pop(2→1)",
      "pop(2→3)",
      "store",
      "sync",
    ]);
  });

  it("an outer loop gets a store→compute token pushed before it and popped after it; virtual threads repeat every leaf", () => {
    const t: string[] = [];
    const cmd = new VtaCommandQueue();
    cmd.depPush = (f, to) => void t.push(`push(${f}→${to})`);
    cmd.depPop = (f, to) => void t.push(`pop(${f}→${to})`);
    cmd.synchronize = () => (t.push("sync"), { insns: new Uint8Array(0), uops: new Uint8Array(0), relocations: [] });
    const body = seq(C("reset", t), loop("ic", 2, seq(L("load", t), C("gemm", t))), C("alu", t), S("store", t));
    runLowered(loop("h", 2, body), cmd, { threads: 2, trailingPops: "carry" });
    const text = t.join(" ");
    assert.ok(
      text.startsWith("push(3→2) push(3→2) pop(3→2) reset push(2→1) pop(3→2) reset push(2→1) pop(2→1) load push(1→2) pop(2→1) load push(1→2) pop(1→2) gemm"),
      text,
    );
    assert.ok(text.includes("gemm push(2→1) pop(2→1) pop(2→1) alu push(2→3) alu push(2→3) pop(2→3) store push(3→2) pop(2→3) store push(3→2)"), text);
    assert.ok(text.endsWith("push(3→2) pop(3→2) pop(3→2) sync"), text);
  });

  it('without virtual threads TVM\'s trailing pop falls after the sync ("carry") unless committed', () => {
    const run = (trailingPops: "carry" | "commit") => {
      const t: string[] = [];
      const cmd = new VtaCommandQueue();
      cmd.depPush = (f, to) => void t.push(`push(${f}→${to})`);
      cmd.depPop = (f, to) => void t.push(`pop(${f}→${to})`);
      cmd.synchronize = () => (t.push("sync"), { insns: new Uint8Array(0), uops: new Uint8Array(0), relocations: [] });
      runLowered(loop("i", 3, seq(C("compute", t), S("store", t))), cmd, { threads: 1, trailingPops });
      return t.slice(-2);
    };
    assert.deepEqual(run("carry"), ["sync", "pop(3→2)"]);
    assert.deepEqual(run("commit"), ["pop(3→2)", "sync"]);
  });

  it("plans nothing between scopes of one queue and merges adjacent ones", () => {
    const t: string[] = [];
    const root = seq(C("a", t), C("b", t));
    assert.equal(root.kind, "scope");
    const plan = planCoprocSync(root);
    assert.equal(plan.before.size + plan.after.size, 0);
  });

  it("every compiled stream keeps the token protocol: no deadlock, queues empty at the end", () => {
    const specs: VtaKernelSpec[] = [
      VTA_CONV2D,
      { kind: "conv2d", workload: { ...VTA_CONV2D.workload }, schedule: { ...VTA_CONV2D.schedule, virtualThreads: 1 } },
      {
        kind: "conv2d",
        workload: { batch: 1, inChannels: 32, outChannels: 32, height: 9, width: 9, kernelH: 3, kernelW: 3, padH: 1, padW: 1, strideH: 2, strideW: 2 },
        schedule: { ocBlock: 1, icBlock: 2, hBlock: 5, wBlock: 5, virtualThreads: 2, storeGranularity: "row" },
      },
      {
        kind: "conv2d",
        workload: { batch: 1, inChannels: 16, outChannels: 16, height: 8, width: 8, kernelH: 1, kernelW: 1 },
        schedule: { ocBlock: 1, icBlock: 1, hBlock: 8, wBlock: 8, virtualThreads: 1, storeGranularity: "channel" },
      },
      {
        kind: "matmul",
        workload: { batch: 4, inFeatures: 64, outFeatures: 64, shift: 3, clip: [-8, 8] },
        schedule: { batchBlock: 2, inBlock: 2, outBlock: 2, virtualThreads: 2, storeGranularity: "element" },
      },
      { kind: "matmul", workload: { batch: 1, inFeatures: 32, outFeatures: 32 } },
      {
        kind: "elementwise",
        workload: {
          length: 64 * 16,
          ops: [
            { op: "add", rhs: "b" },
            { op: "shr", imm: 1 },
          ],
        },
        schedule: { blockVectors: 16 },
      },
    ];
    for (const spec of specs) {
      const { fn, info } = lowerVtaKernel(spec);
      for (const run of fn.runs) {
        const check = checkDependencies(decodeRun(run));
        assert.ok(check.ok, `${info.name} ${JSON.stringify(info.schedule)}: ${JSON.stringify(check)}`);
        assert.deepEqual(check.left, { l2g: 0, g2l: 0, s2g: 0, g2s: 0 }, `${info.name} leaves tokens`);
      }
    }
  });
});

describe("VTA compiler: counters follow from the workload", () => {
  const cases: { w: VtaConv2dWorkload; s: Partial<VtaConv2dSchedule> }[] = [
    { w: { batch: 1, inChannels: 32, outChannels: 64, height: 10, width: 10, kernelH: 3, kernelW: 3, padH: 1, padW: 1, shift: 4, clip: [0, 127] }, s: {} },
    { w: { batch: 2, inChannels: 16, outChannels: 32, height: 11, width: 11, kernelH: 3, kernelW: 3, strideH: 2, strideW: 2 }, s: { virtualThreads: 1 } },
    { w: { batch: 1, inChannels: 48, outChannels: 32, height: 7, width: 6, kernelH: 1, kernelW: 3, padW: 1 }, s: { icBlock: 3, storeGranularity: "element" } },
  ];
  for (const { w, s } of cases) {
    it(`conv2d ${w.inChannels}→${w.outChannels} ${w.height}×${w.width} k${w.kernelH}×${w.kernelW} s${w.strideH ?? 1}: gemm, alu and store counts`, () => {
      const mod = vtaConv2d(w, s);
      const info = mod.kernels[0]!;
      const OH = Math.floor((w.height + 2 * (w.padH ?? 0) - w.kernelH) / (w.strideH ?? 1)) + 1;
      const OW = Math.floor((w.width + 2 * (w.padW ?? 0) - w.kernelW) / (w.strideW ?? 1)) + 1;
      const outVectors = w.batch * (w.outChannels / 16) * OH * OW;
      assert.equal(info.stats.gemm_counter, outVectors * (w.inChannels / 16) * w.kernelH * w.kernelW);
      assert.equal(info.stats.out_store_nbytes, outVectors * 16);
      const steps = (w.shift ? 1 : 0) + (w.clip ? 2 : 0);
      assert.equal(info.stats.alu_counter, steps * outVectors);
      assert.equal(info.stats.wgt_load_nbytes % (w.outChannels * w.inChannels * w.kernelH * w.kernelW), 0, "whole weights, an integral number of times");
      assert.equal(info.stats.acc_load_nbytes, 0);
    });
  }

  it("picks a schedule that fits when none is given, and reports it", () => {
    const mod = vtaConv2d(VTA_CONV2D.workload);
    const s = mod.kernels[0]!.schedule as VtaConv2dSchedule;
    assert.equal(s.virtualThreads, 2);
    assert.ok(s.ocBlock * s.hBlock * s.wBlock * 2 <= 2048);
    // It moves no more bytes than the tutorial's hand-written schedule.
    const tutorial = lowerVtaKernel(VTA_CONV2D).info.stats;
    const auto = mod.kernels[0]!.stats;
    assert.ok(auto.inp_load_nbytes + auto.wgt_load_nbytes <= tutorial.inp_load_nbytes + tutorial.wgt_load_nbytes);
    assert.equal(auto.gemm_counter, tutorial.gemm_counter);
  });
});

describe("VTA compiler: the module bundle", () => {
  it("is a vta bundle with the hardware name, a function table of int8 buffers with shapes, and the program", () => {
    const mod = compileVta([VTA_CONV2D, { kind: "matmul", name: "fc", workload: { batch: 1, inFeatures: 64, outFeatures: 32 } }]);
    const bundle = decodeBundle(mod.bytes);
    assert.equal(bundle.target, "vta");
    assert.deepEqual(bundle.targetDetails, { hardware: "1x16_i8w8a32_15_15_18_17" });
    assert.deepEqual(
      bundle.functions.map((f) => f.name),
      ["conv2d", "fc"],
    );
    assert.deepEqual(bundle.functions[0]!.params, [
      { name: "data", kind: "buffer", dtype: "int8", shape: [1, 16, 14, 14, 1, 16] },
      { name: "kernel", kind: "buffer", dtype: "int8", shape: [16, 16, 3, 3, 16, 16] },
      { name: "res", kind: "buffer", dtype: "int8", shape: [1, 16, 14, 14, 1, 16] },
    ]);
    assert.deepEqual(
      bundle.functions[1]!.params.map((p) => p.shape),
      [
        [1, 4, 1, 16],
        [2, 4, 16, 16],
        [1, 2, 1, 16],
      ],
    );
    const binary = decodeVtaBinary(bundle.binary);
    assert.equal(binary.hardware, mod.hardware.name);
    assert.deepEqual(Object.keys(binary.functions), ["conv2d", "fc"]);
    assert.deepEqual(new Uint8Array(binary.functions.conv2d!.runs[0]!.insns), new Uint8Array(mod.program.functions.conv2d!.runs[0]!.insns));
    assert.match(mod.name, /^[0-9a-f]{16}\.kfm$/);
    // Relocations: every data-moving LOAD/STORE names its parameter (0 data, 1 kernel, 2 res) or the uop buffer.
    const run = mod.program.functions.conv2d!.runs[0]!;
    const spaces = new Set(
      runToStream(run)
        .lines.filter((l) => l.dram)
        .map((l) => `${l.kind}:${l.dram!.space}`),
    );
    assert.deepEqual([...spaces].sort(), ["LOAD_INP:arg0", "LOAD_UOP:uop", "LOAD_WGT:arg1", "STORE:arg2"]);
  });

  it("vtaVectorAdd is the get-started program: two ACC loads, one ALU ADD, one store", () => {
    const mod = vtaVectorAdd(1024);
    const lines = runToStream(mod.program.functions.vector_add!.runs[0]!).lines;
    assert.deepEqual(
      lines.slice(0, 5).map((l) => `${l.kind} ${l.fields}`),
      [
        "LOAD_ACC sram 0 <dram> y 1 x 64 s 64",
        "LOAD_ACC sram 64 <dram> y 1 x 64 s 64",
        "LOAD_UOP sram 0 <dram> y 1 x 1 s 1",
        "ALU ADD uop[0,1) out 1 (0,0) in 64 (1,1)",
        "STORE sram 0 <dram> y 1 x 64 s 64",
      ],
    );
    assert.deepEqual(
      mod.functions[0]!.params.map((p) => `${p.name}:${p.dtype}[${p.shape}]`),
      ["a:int32[1024]", "b:int32[1024]", "c:int8[1024]"],
    );
  });

  it("compiles for another hardware configuration and says so", () => {
    const hw = vtaHardware({ ...DEFAULT_VTA_CONFIG, logAccBuffSize: 16 });
    const mod = vtaMatmul({ batch: 1, inFeatures: 64, outFeatures: 64 }, undefined, { hardware: hw });
    assert.equal(decodeBundle(mod.bytes).targetDetails.hardware, "1x16_i8w8a32_15_15_18_16");
  });
});

describe("VTA compiler: refusals", () => {
  const conv = VTA_CONV2D.workload;
  const sched = VTA_CONV2D.schedule as VtaConv2dSchedule;

  it("options and specs of the wrong shape, and fields it does not know (a typo would compile something else), are INVALID_ARGUMENT", () => {
    const spec = { kind: "conv2d", workload: conv } as VtaKernelSpec;
    expectFarmError(
      () => compileVta({ ...spec, workload: { ...conv, stride: 2 } } as never),
      "INVALID_ARGUMENT",
      /^compileVta: conv2d workload has an unknown key "stride"; the keys are batch, .*strideH, strideW, shift, clip$/,
    );
    expectFarmError(
      () => compileVta({ ...spec, schedule: "fast" } as never),
      "INVALID_ARGUMENT",
      /^compileVta: conv2d schedule must be an object \{ ocBlock\?, .* \}, got "fast"$/,
    );
    expectFarmError(
      () => compileVta({ ...spec, schedule: { tileH: 2 } } as never),
      "INVALID_ARGUMENT",
      /^compileVta: conv2d schedule has an unknown key "tileH"/,
    );
    expectFarmError(
      () => compileVta({ ...spec, shape: [1] } as never),
      "INVALID_ARGUMENT",
      /^compileVta: the kernel spec has an unknown key "shape"; the keys are kind, name, workload, schedule$/,
    );
    expectFarmError(
      () => compileVta({ kind: "matmul", workload: { batch: 1, inFeatures: 16, outFeatures: 16, bias: true } } as never),
      "INVALID_ARGUMENT",
      /matmul workload has an unknown key "bias"/,
    );
    expectFarmError(
      () => compileVta({ kind: "elementwise", workload: { length: 16, ops: [{ op: "add", rhs: "b" }] }, schedule: { blocks: 1 } } as never),
      "INVALID_ARGUMENT",
      /elementwise schedule has an unknown key "blocks"/,
    );
    expectFarmError(() => compileVta(spec, null as never), "INVALID_ARGUMENT", /^compileVta: options must be \{ hardware\?, trailingPops\? \}, got null$/);
    expectFarmError(
      () => compileVta(spec, { hardware: "pynq" } as never),
      "INVALID_ARGUMENT",
      /^compileVta: hardware must be a VtaHardware, made by vtaHardware\(config\)/,
    );
    expectFarmError(
      () => vtaConv2d(conv, undefined, { name: "c", hardwre: vtaHardware() } as never),
      "INVALID_ARGUMENT",
      /options has an unknown key "hardwre"/,
    );
  });

  it("shapes not divisible by the block sizes", () => {
    expectFarmError(() => vtaConv2d({ ...conv, inChannels: 24 }), "COMPILE_ERROR", /inChannels \(24\) is not divisible by BLOCK_IN \(16\)/);
    expectFarmError(() => vtaConv2d({ ...conv, outChannels: 40 }), "COMPILE_ERROR", /outChannels \(40\) is not divisible by BLOCK_OUT \(16\)/);
    expectFarmError(() => vtaMatmul({ batch: 1, inFeatures: 20, outFeatures: 16 }), "COMPILE_ERROR", /inFeatures \(20\)/);
    expectFarmError(() => vtaVectorAdd(1000), "COMPILE_ERROR", /length \(1000\) is not divisible by BATCH × BLOCK_OUT \(16\)/);
    expectFarmError(() => vtaConv2d(conv, { ...sched, hBlock: 5 }), "COMPILE_ERROR", /output height \(14\) is not divisible by hBlock \(5\)/);
    expectFarmError(
      () => vtaConv2d(conv, { ...sched, ocBlock: 16 }),
      "COMPILE_ERROR",
      /output-channel blocks \(16\) is not divisible by ocBlock × virtualThreads = 16 × 2/,
    );
  });

  it("tiles that overflow an on-chip buffer, naming the buffer, the size needed and the size available", () => {
    expectFarmError(
      () => vtaConv2d(conv, { ...sched, hBlock: 14 }),
      "COMPILE_ERROR",
      /does not fit the ACC buffer: .* needs 3136 elements \(200704 B\), the ACC buffer holds 2048 \(131072 B\)/,
    );
    expectFarmError(
      () => vtaConv2d(conv, { ...sched, icBlock: 8 }),
      "COMPILE_ERROR",
      /does not fit the INP buffer: .* needs 2304 elements \(36864 B\), the INP buffer holds 2048 \(32768 B\)/,
    );
    expectFarmError(
      () => vtaConv2d(conv, { ...sched, icBlock: 16, hBlock: 2 }),
      "COMPILE_ERROR",
      /does not fit the WGT buffer: .* needs 2304 elements \(589824 B\), the WGT buffer holds 1024 \(262144 B\)/,
    );
    expectFarmError(
      () =>
        vtaMatmul({ batch: 1, inFeatures: 1024, outFeatures: 1024 }, { batchBlock: 1, inBlock: 64, outBlock: 64, virtualThreads: 1, storeGranularity: "tile" }),
      "COMPILE_ERROR",
      /WGT buffer: .* needs 4096 elements/,
    );
    expectFarmError(
      () => vtaElementwise({ length: 16 * 2048, ops: [{ op: "max", rhs: "b" }] }, { blockVectors: 2048 }),
      "COMPILE_ERROR",
      /does not fit the ACC buffer: the operand tiles \(2 × 2048 vectors\) needs 4096 elements/,
    );
    const e = (() => {
      try {
        vtaConv2d(conv, { ...sched, hBlock: 14 });
      } catch (err) {
        return err as FarmError;
      }
      return undefined;
    })();
    assert.deepEqual(e?.details, { buffer: "ACC", needed: 3136, available: 2048, neededBytes: 200704, availableBytes: 131072 });
  });

  it("uop kernels the runtime would refuse: VerifyDep, more than two ALU loops", () => {
    // A 1×2 output tile with a 2-block, 3×3 reduction: whatever the loop order, a uop repeats an accumulator within 2.
    const narrow = { batch: 1, inChannels: 32, outChannels: 16, height: 3, width: 4, kernelH: 3, kernelW: 3 };
    expectFarmError(
      () => vtaConv2d(narrow, { ocBlock: 1, icBlock: 2, hBlock: 1, wBlock: 2, virtualThreads: 1, storeGranularity: "row" }),
      "COMPILE_ERROR",
      /VerifyDep.*at least 3 output vectors/,
    );
    // Narrow tiles are fine when another axis goes innermost (here the 14 rows).
    const k = vtaConv2d(conv, { ...sched, wBlock: 2, hBlock: 14, ocBlock: 1 }).kernels[0]!;
    assert.equal(k.stats.gemm_counter, lowerVtaKernel(VTA_CONV2D).info.stats.gemm_counter);
    expectFarmError(
      () =>
        aluLoops(
          [
            { extent: 2, dst: 100, src: 100, wgt: 0 },
            { extent: 3, dst: 20, src: 20, wgt: 0 },
            { extent: 4, dst: 1, src: 1, wgt: 0 },
          ],
          "test",
        ),
      "COMPILE_ERROR",
      /flattens to 3 loops \(2 × 3 × 4\).*at most 2/,
    );
    assert.deepEqual(
      aluLoops(
        [
          { extent: 8, dst: 98, src: 98, wgt: 0 },
          { extent: 7, dst: 14, src: 14, wgt: 0 },
          { extent: 14, dst: 1, src: 1, wgt: 0 },
        ],
        "test",
      ),
      [{ extent: 784, dst: 1, src: 1, wgt: 0 }],
    );
  });

  it("padding beyond what a load can insert", () => {
    const w = { ...conv, height: 4, width: 4, padH: 16, padW: 16, kernelH: 3, kernelW: 3 };
    expectFarmError(
      () => vtaConv2d(w, { ocBlock: 1, icBlock: 1, hBlock: 2, wBlock: 17, virtualThreads: 1, storeGranularity: "row" }),
      "COMPILE_ERROR",
      /output row tile 0 needs 16 rows of padding; a VTA load pads at most 15/,
    );
  });

  it("DMA regions that are not 2-D", () => {
    expectFarmError(
      () =>
        dma2d(
          [
            { extent: 2, stride: 100 },
            { extent: 3, stride: 10 },
            { extent: 4, stride: 1 },
          ],
          "test",
        ),
      "COMPILE_ERROR",
      /not a 2-D pattern/,
    );
    assert.deepEqual(
      dma2d(
        [
          { extent: 16, stride: 16 },
          { extent: 1, stride: 1 },
        ],
        "t",
      ),
      { xSize: 1, ySize: 16, xStride: 16 },
    );
    assert.deepEqual(
      dma2d(
        [
          { extent: 4, stride: 64 },
          { extent: 64, stride: 1 },
        ],
        "t",
      ),
      { xSize: 256, ySize: 1, xStride: 256 },
    );
  });

  it("malformed requests are INVALID_ARGUMENT", () => {
    expectFarmError(() => vtaConv2d({ ...conv, batch: 0 }), "INVALID_ARGUMENT", /conv2d.batch must be a positive integer/);
    expectFarmError(() => vtaConv2d({ ...conv, padH: -1 }), "INVALID_ARGUMENT", /padH/);
    expectFarmError(() => vtaConv2d(conv, { ...sched, virtualThreads: 3 as 2 }), "INVALID_ARGUMENT", /virtualThreads must be one of 1, 2/);
    expectFarmError(() => vtaConv2d({ ...conv, shift: 40 }), "INVALID_ARGUMENT", /shift must be an integer in 0..31/);
    expectFarmError(() => vtaConv2d({ ...conv, clip: [10, 0] }), "INVALID_ARGUMENT", /min is above max/);
    expectFarmError(() => vtaConv2d({ ...conv, height: 2, width: 2, padH: 0, padW: 0 }), "INVALID_ARGUMENT", /does not fit the 2×2 input/);
    expectFarmError(() => compileVta({ kind: "fft" } as unknown as VtaKernelSpec), "INVALID_ARGUMENT", /unknown VTA kernel kind "fft"/);
    expectFarmError(() => compileVta([]), "INVALID_ARGUMENT", /at least one kernel/);
    expectFarmError(() => compileVta([VTA_CONV2D, VTA_CONV2D]), "INVALID_ARGUMENT", /two VTA functions are named "conv2d"/);
    expectFarmError(() => compileVta({ ...VTA_CONV2D, name: "my-conv" }), "INVALID_ARGUMENT", /not a C identifier/);
    expectFarmError(() => vtaVectorAdd(1024, { trailingPops: "later" as "carry" }), "INVALID_ARGUMENT", /trailingPops/);
    expectFarmError(
      () => compileVta({ kind: "elementwise", workload: { length: 1024, ops: [{ op: "shr", imm: 70000 }] } }),
      "INVALID_ARGUMENT",
      /within int16/,
    );
  });
});
