/**
 * VTA kernels compiled on the host (compileVta) and run end to end behind
 * real tracker and agent processes, through the host SDK: request → upload →
 * loadModule → remote arrays of packed inputs → call → toArray → unpack. The
 * whole suite runs twice: on a simulator board (`--board vta-sim:key=vta`)
 * and on an FPGA board's mmio driver over the register-level device model
 * (`--board vta:model:key=vta`), with the same expectations
 * (helpers/vta-boards.ts; on a real board, `npm run test:pynq`).
 *
 * * TVM's three tutorials: outputs equal the plain reference, and stats()
 *   after clearStats() equal exactly the statistics TVM's simulator printed
 *   (docs/vta-isa.md §9.1–9.3, written out below).
 * * time_evaluator on a VTA board: repeated calls stay correct.
 * * Other shapes and schedules: channel counts, strides, paddings, 1 vs 2
 *   virtual threads.
 * * Bad input (issue 3): a corrupt instruction stream fails naming the
 *   instruction and the board stays healthy; wrong argument buffers fail
 *   clearly; shapes not divisible by the block sizes are refused at compile time.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { BUNDLE_FORMAT, BUNDLE_VERSION, FarmError, encodeBundle } from "../protos/index.ts";
import {
  compileVta,
  vtaConv2d,
  vtaMatmul,
  VTA_TUTORIALS,
  type RemoteArray,
  type Session,
  type VtaCompiledModule,
  type VtaConv2dWorkload,
} from "../host-sdk/index.ts";
import { DEFAULT_VTA_HARDWARE as hw, MEM, OPCODE, decodeInsn, decodeRun, encodeInsn, encodeVtaBinary, type VtaRun } from "../vta/index.ts";
import { startFarm, waitForFreeBoards } from "./helpers/processes.ts";
import { vtaTestBoards } from "./helpers/vta-boards.ts";
import { conv2dCase, firstMismatch, matmulCase, type VtaCase } from "./helpers/vta.ts";

/** What TVM's simulator printed for each tutorial (docs/vta-isa.md §9.1, §9.2, §9.3). */
const PUBLISHED: Record<"matrix_multiply" | "matrix_multiply_opt" | "convolution_opt", Record<string, number>> = {
  matrix_multiply: {
    inp_load_nbytes: 256,
    wgt_load_nbytes: 65536,
    acc_load_nbytes: 0,
    uop_load_nbytes: 8,
    out_store_nbytes: 256,
    gemm_counter: 256,
    alu_counter: 0,
  },
  matrix_multiply_opt: {
    inp_load_nbytes: 4096,
    wgt_load_nbytes: 1048576,
    acc_load_nbytes: 0,
    uop_load_nbytes: 20,
    out_store_nbytes: 1024,
    gemm_counter: 4096,
    alu_counter: 192,
  },
  convolution_opt: {
    inp_load_nbytes: 114688,
    wgt_load_nbytes: 1179648,
    acc_load_nbytes: 0,
    uop_load_nbytes: 1144,
    out_store_nbytes: 50176,
    gemm_counter: 451584,
    alu_counter: 9408,
  },
};
const TVM_COUNTERS = Object.keys(PUBLISHED.convolution_opt);

/** The seven TVM counters of a stats() reply. */
function tvmCounters(counters: Record<string, number>): Record<string, number | undefined> {
  return Object.fromEntries(TVM_COUNTERS.map((k) => [k, counters[k]]));
}

/** A compiled module uploaded and loaded in `s`, with remote arrays for `c`'s inputs and an output array. */
async function prepare(s: Session, mod: VtaCompiledModule, c: VtaCase) {
  await s.upload(mod);
  const remote = await s.loadModule(mod.name);
  const spec = mod.functions[0]!;
  const shape = (i: number) => spec.params[i]!.shape!;
  const inputs = await Promise.all(c.inputs.map((x, i) => s.array(x, shape(i))));
  const out = await s.array({ shape: shape(2), dtype: "int8" });
  const args: RemoteArray[] = [...inputs, out];
  return {
    remote,
    fn: remote.getFunction(spec.name),
    args,
    out,
    /** The output read back, unpacked, compared with the reference. */
    async check(what: string): Promise<void> {
      const packed = await out.toArray();
      assert.ok(packed instanceof Int8Array, `${what}: an int8 output`);
      assert.equal(firstMismatch(c.unpack(packed), c.want), undefined, what);
    },
  };
}

/** One call after clearStats(); checks the output and returns the call's counters. */
async function callOnce(s: Session, mod: VtaCompiledModule, c: VtaCase, what: string): Promise<Record<string, number>> {
  const p = await prepare(s, mod, c);
  await s.clearStats();
  await p.fn(...p.args);
  const { counters } = await s.stats();
  await p.check(what);
  return counters;
}

function isFarmError(code: string, ...patterns: RegExp[]): (e: unknown) => boolean {
  return (e: unknown) => {
    assert.ok(e instanceof FarmError, `expected a FarmError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    for (const p of patterns) assert.match(e.message, p);
    return true;
  };
}

for (const board of vtaTestBoards())
  describe(`VTA kernels compiled on the host, run through a farm on ${board.what}`, () => {
    let farm: Awaited<ReturnType<typeof startFarm>>;
    const withSession = async <T>(fn: (s: Session) => Promise<T>): Promise<T> => {
      const s = await farm.client.request("vta");
      try {
        return await fn(s);
      } finally {
        await s.close();
      }
    };

    before(async () => {
      farm = await startFarm([board.flag], { agentArgs: board.agentArgs });
    });
    after(() => farm.stop());

    describe("TVM's tutorials: outputs equal the reference, statistics equal the published ones", () => {
      it("matrix_multiply (§9.1): (1×256)·(256×256), wrapped to int8", async () => {
        const spec = VTA_TUTORIALS.matrix_multiply;
        const counters = await withSession((s) => callOnce(s, compileVta(spec), matmulCase(spec.workload, 101), "matrix_multiply"));
        assert.deepEqual(tvmCounters(counters), PUBLISHED.matrix_multiply);
      });

      it("matrix_multiply_opt (§9.2): (1×1024)·(1024×1024), >> 8, clip [0, 127]", async () => {
        const spec = VTA_TUTORIALS.matrix_multiply_opt;
        const counters = await withSession((s) => callOnce(s, compileVta(spec), matmulCase(spec.workload, 102), "matrix_multiply_opt"));
        assert.deepEqual(tvmCounters(counters), PUBLISHED.matrix_multiply_opt);
      });

      it("convolution_opt (§9.3): ResNet-18 layer 9, 2 virtual threads", async () => {
        const spec = VTA_TUTORIALS.convolution_opt;
        const counters = await withSession((s) => callOnce(s, compileVta(spec), conv2dCase(spec.workload, 103), "convolution_opt"));
        assert.deepEqual(tvmCounters(counters), PUBLISHED.convolution_opt);
        assert.ok(counters[board.timeCounter]! > 0, `the run's time (${board.timeCounter})`);
      });
    });

    it("time_evaluator on a VTA board: every timed call counts and the output stays right", async () => {
      const spec = VTA_TUTORIALS.matrix_multiply_opt;
      const mod = compileVta(spec);
      const name = mod.functions[0]!.name;
      const c = matmulCase(spec.workload, 104);
      await withSession(async (s) => {
        const p = await prepare(s, mod, c);
        await s.clearStats();
        const timed = await p.remote.timeEvaluator(name, { number: 3, repeat: 2 })(...p.args);
        assert.equal(timed.results.length, 2);
        assert.ok(
          timed.results.every((r) => r > 0),
          `repeats of ${timed.results.join(", ")} s`,
        );
        await p.check("after time_evaluator");
        // Every call ran the whole program (the evaluator may add a warm-up call).
        const gemms = (await s.stats()).counters.gemm_counter!;
        const perCall = PUBLISHED.matrix_multiply_opt.gemm_counter!;
        assert.ok(gemms % perCall === 0 && gemms >= perCall * timed.number * 2, `${gemms} GEMM executions for ${timed.number} × 2 timed calls`);
        // After many calls on the same board, one more call still reports exactly one call's statistics.
        await p.out.copyFrom(new Int8Array(c.outLength));
        await s.clearStats();
        await p.fn(...p.args);
        assert.deepEqual(tvmCounters((await s.stats()).counters), PUBLISHED.matrix_multiply_opt);
        await p.check("a call after time_evaluator");
        // The session-level evaluator finds the function by name.
        const again = await s.timeEvaluator(name, { number: 1, repeat: 1 })(...p.args);
        assert.equal(again.results.length, 1);
        await p.check("after session.timeEvaluator");
      });
    });

    it("other shapes and schedules: channel counts, strides, paddings, 1 vs 2 virtual threads", async () => {
      const base: VtaConv2dWorkload = {
        batch: 1,
        inChannels: 32,
        outChannels: 32,
        height: 8,
        width: 8,
        kernelH: 3,
        kernelW: 3,
        padH: 1,
        padW: 1,
        shift: 6,
        clip: [0, 127],
      };
      const tile = { ocBlock: 1, icBlock: 1, hBlock: 4, wBlock: 8, storeGranularity: "channel" } as const;
      const cases: { what: string; mod: VtaCompiledModule; c: VtaCase }[] = [
        { what: "1 virtual thread", mod: vtaConv2d(base, { ...tile, virtualThreads: 1 }), c: conv2dCase(base, 201) },
        { what: "2 virtual threads", mod: vtaConv2d(base, { ...tile, virtualThreads: 2 }), c: conv2dCase(base, 201) },
        (() => {
          const w = { ...base, strideH: 2, strideW: 2, height: 9, width: 9 };
          return { what: "stride 2", mod: vtaConv2d(w, { virtualThreads: 2, storeGranularity: "row" }), c: conv2dCase(w, 202) };
        })(),
        (() => {
          const w = { ...base, padH: 2, padW: 0, kernelH: 5, kernelW: 3, height: 6, width: 7, shift: 0, clip: null };
          return { what: "5×3 kernel, pad 2×0, no epilogue, 2 input-channel blocks per step", mod: vtaConv2d(w, { icBlock: 2 }), c: conv2dCase(w, 203) };
        })(),
        (() => {
          const w = {
            ...base,
            batch: 2,
            inChannels: 48,
            outChannels: 64,
            height: 5,
            width: 6,
            kernelH: 1,
            kernelW: 1,
            padH: 0,
            padW: 0,
            clip: [-20, 50] as const,
          };
          return { what: "batch 2, 48 → 64 channels, 1×1 kernel", mod: vtaConv2d(w, { virtualThreads: 2, ocBlock: 2 }), c: conv2dCase(w, 204) };
        })(),
        (() => {
          const w = { batch: 4, inFeatures: 64, outFeatures: 96, shift: 5, clip: [-100, 100] as const };
          const schedule = { batchBlock: 2, inBlock: 2, outBlock: 3, virtualThreads: 2, storeGranularity: "element" } as const;
          return { what: "matmul 4×64 · 64×96, 2 virtual threads", mod: vtaMatmul(w, schedule), c: matmulCase(w, 205) };
        })(),
      ];
      const cycles: number[] = [];
      await withSession(async (s) => {
        for (const { what, mod, c } of cases) {
          const counters = await callOnce(s, mod, c, what);
          assert.deepEqual(tvmCounters(counters), mod.kernels[0]!.stats, `${what}: the board's counters = the compiler's count`);
          cycles.push(counters[board.timeCounter]!);
        }
      });
      if (board.showsLatencyHiding) assert.ok(cycles[1]! < cycles[0]!, `2 threads: ${cycles[1]} cycles, 1 thread: ${cycles[0]}`);
      else
        assert.ok(
          cycles.every((x) => x > 0),
          `every case timed: ${cycles.join(", ")}`,
        );
    });

    describe("bad input", () => {
      const spec = VTA_TUTORIALS.matrix_multiply;
      const mod = compileVta(spec);
      const good = mod.program.functions[mod.functions[0]!.name]!.runs[0]!;
      const insns = decodeRun(good);
      const inpLoad = insns.findIndex((x) => x.opcode === OPCODE.LOAD && x.memoryType === MEM.INP);
      const wgtLoad = insns.findIndex((x) => x.opcode === OPCODE.LOAD && x.memoryType === MEM.WGT);
      const uopLoad = insns.findIndex((x, i) => i > 0 && x.opcode === OPCODE.LOAD && x.memoryType === MEM.UOP);
      const edited = (edit: (run: VtaRun) => void): VtaRun => {
        const run = { insns: good.insns.slice(), uops: good.uops, relocations: good.relocations.map((r) => ({ ...r })) };
        edit(run);
        return run;
      };
      /** The tutorial as `good`, and corrupted copies of its stream. */
      const broken = {
        // Opcode 7 does not exist.
        bad_opcode: edited((run) => (run.insns[uopLoad * 16] = (run.insns[uopLoad * 16]! & ~7) | 7)),
        // A LOAD INP one past the end of the INP buffer.
        bad_sram: edited((run) => {
          const x = decodeInsn(run.insns, inpLoad * 16);
          if (x.opcode === OPCODE.LOAD) x.sramBase = hw.inpDepth;
          run.insns.set(encodeInsn(x, hw), inpLoad * 16);
        }),
        // Without its relocation the LOAD WGT reads an absolute DRAM address no buffer of the call holds.
        bad_dram: edited((run) => (run.relocations = run.relocations.filter((r) => r.insn !== wgtLoad))),
      };
      const bundle = encodeBundle({
        format: BUNDLE_FORMAT,
        version: BUNDLE_VERSION,
        target: "vta",
        targetDetails: { hardware: hw.name },
        binary: encodeVtaBinary({
          hardware: hw.name,
          functions: { good: { runs: [good] }, ...Object.fromEntries(Object.entries(broken).map(([name, run]) => [name, { runs: [run] }])) },
        }),
        functions: ["good", ...Object.keys(broken)].map((name) => ({ name, params: mod.functions[0]!.params })),
      });

      it("a corrupt instruction stream fails naming the instruction, and the board stays healthy", async () => {
        assert.ok(inpLoad > 0 && wgtLoad > 0 && uopLoad > 0, "the tutorial stream has the loads to corrupt");
        const c = matmulCase(spec.workload, 301);
        await withSession(async (s) => {
          await s.upload(bundle, "corrupt.kfm");
          const m = await s.loadModule("corrupt.kfm");
          const shape = (i: number) => mod.functions[0]!.params[i]!.shape!;
          const args = [await s.array(c.inputs[0], shape(0)), await s.array(c.inputs[1], shape(1)), await s.array({ shape: shape(2), dtype: "int8" })];
          await assert.rejects(m.getFunction("bad_opcode")(...args), isFarmError("RUNTIME_ERROR", new RegExp(`instruction ${uopLoad} .*unknown opcode 7`)));
          await assert.rejects(
            m.getFunction("bad_sram")(...args),
            isFarmError("RUNTIME_ERROR", new RegExp(`instruction ${inpLoad} .*INP SRAM elements \\[${hw.inpDepth}, `)),
          );
          await assert.rejects(m.getFunction("bad_dram")(...args), isFarmError("RUNTIME_ERROR", new RegExp(`instruction ${wgtLoad} `), board.strayAddress));
          // The same board, the same session: a good call right after works, with exact statistics.
          await s.clearStats();
          await m.getFunction("good")(...args);
          assert.deepEqual(tvmCounters((await s.stats()).counters), PUBLISHED.matrix_multiply);
          const out = await args[2]!.toArray();
          assert.equal(firstMismatch(c.unpack(out as Int8Array), c.want), undefined);
        });
        // And the board goes back to the pool for the next session.
        await waitForFreeBoards(farm.client, 1, "vta");
        await withSession((s) => callOnce(s, mod, c, "the next session"));
      });

      it("wrong argument buffers at call time fail with a clear error", async () => {
        const c = matmulCase(spec.workload, 302);
        await withSession(async (s) => {
          const p = await prepare(s, mod, c);
          const [a, w, out] = p.args as [RemoteArray, RemoteArray, RemoteArray];
          const small = await s.array({ shape: [1, 16, 1, 8], dtype: "int8" });
          await assert.rejects(p.fn(a, w, small), isFarmError("BAD_ARGUMENTS", /argument 2 \(C\)/, /shape \[1, 16, 1, 16\]/, /got \[1, 16, 1, 8\]/));
          const wide = await s.array({ shape: [1, 16, 1, 16], dtype: "int32" });
          await assert.rejects(p.fn(wide, w, out), isFarmError("BAD_ARGUMENTS", /argument 0 \(A\)/, /int8 array, got int32/));
          await assert.rejects(p.fn(a, w), isFarmError("BAD_ARGUMENTS", /takes 3 argument\(s\), got 2/));
          await assert.rejects(p.fn(a, w, 7), isFarmError("BAD_ARGUMENTS", /argument 2 \(C\)/, /got a scalar/));
          await p.fn(...p.args);
          await p.check("a good call after the bad ones");
        });
      });

      it("shapes not divisible by the block sizes are refused at compile time (COMPILE_ERROR), on the host", () => {
        const conv = VTA_TUTORIALS.convolution_opt.workload;
        assert.throws(() => vtaConv2d({ ...conv, inChannels: 24 }), isFarmError("COMPILE_ERROR", /inChannels \(24\) is not divisible by BLOCK_IN \(16\)/));
        assert.throws(() => vtaConv2d({ ...conv, outChannels: 250 }), isFarmError("COMPILE_ERROR", /outChannels \(250\) is not divisible by BLOCK_OUT \(16\)/));
        assert.throws(() => vtaConv2d(conv, { hBlock: 5 }), isFarmError("COMPILE_ERROR", /output height \(14\) is not divisible by hBlock \(5\)/));
        assert.throws(
          () => vtaMatmul({ batch: 1, inFeatures: 100, outFeatures: 256 }),
          isFarmError("COMPILE_ERROR", /inFeatures \(100\) is not divisible by BLOCK_IN \(16\)/),
        );
      });
    });
  });
