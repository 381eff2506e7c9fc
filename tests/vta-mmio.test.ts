/**
 * The mmio VTA board in-process: the real driver (device-agent/backends/
 * vta-mmio/driver.ts) on the register-level device model.
 *
 * * The simulator and the device model give bit-identical outputs and the
 *   same seven statistics, for TVM's three tutorials and other shapes and
 *   schedules, call after call.
 * * The driver writes the registers in the order TVM's Pynq driver does.
 * * The model is strict: each offence is an error that names it.
 * * A device that never raises done is a TIMEOUT, and the board refuses
 *   further runs until it is replaced.
 * * Bad input: a stream larger than the instruction buffer, a missing
 *   /dev/mem or buffer device, an unknown allocator.
 * * In a farm (real tracker and agent processes): a device that hangs in a
 *   session fails that session's calls with TIMEOUT, its worker is replaced,
 *   the new worker's canary re-checks the board, and the next session works.
 * * `kfarm vta program` and Session.programFpga: the bitstream's hash becomes
 *   the board's label; a configuration that is not the board's is refused,
 *   naming both; bad companions and boards of other kinds are refused.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { FarmError, decodeBundle } from "../protos/index.ts";
import { compileVta, vtaConv2d, vtaMatmul, VTA_TUTORIALS, type VtaCompiledModule, type VtaConv2dWorkload } from "../host-sdk/index.ts";
import { runVtaFunction } from "../device-agent/backends/vta-sim/index.ts";
import { TVM_COUNTERS } from "../device-agent/backends/vta-board/stats.ts";
import { VtaMmioBackend } from "../device-agent/backends/vta-mmio/backend.ts";
import type { RegisterBus } from "../device-agent/backends/vta-mmio/bus.ts";
import { VtaMmioDriver } from "../device-agent/backends/vta-mmio/driver.ts";
import { DevMemBus, UdmabufMemory, openDmaMemory } from "../device-agent/backends/vta-mmio/linux.ts";
import { VtaDeviceModel } from "../device-agent/backends/vta-mmio/model.ts";
import { VTA_TARGETS, registerName, MODULES, VTA_IP_REG_MAP_RANGE } from "../device-agent/backends/vta-mmio/registers.ts";
import type { ArgValue } from "../device-agent/backends/backend.ts";
import { DEFAULT_VTA_HARDWARE as hw, MEM, OPCODE, NO_DEPS, encodeInsn } from "../vta/index.ts";
import { runCli, startFarm, waitFor } from "./helpers/processes.ts";
import { conv2dCase, firstMismatch, matmulCase, type VtaCase } from "./helpers/vta.ts";

const bytes = (a: Int8Array) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
const isFarmError =
  (code: string, ...patterns: RegExp[]) =>
  (e: unknown) => {
    assert.ok(e instanceof FarmError, `expected a FarmError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    for (const p of patterns) assert.match(e.message, p);
    return true;
  };
const tvmCounters = (c: Record<string, number>) => Object.fromEntries(TVM_COUNTERS.map((k) => [k, c[k]]));

/** `mod` on the device model through the mmio backend, `calls` times; the output of each call and the statistics of the last. */
function onModel(mod: VtaCompiledModule, c: VtaCase, calls: number, backend = new VtaMmioBackend({ device: "model" })) {
  const loaded = backend.load(decodeBundle(mod.bytes));
  const fn = loaded.functions.get(mod.functions[0]!.name)!;
  const arrays = [...c.inputs, new Int8Array(c.outLength)].map((x) => {
    const a = backend.alloc(x.byteLength);
    a.write(0, bytes(x));
    return a;
  });
  const args: ArgValue[] = arrays.map((array) => ({ kind: "buffer", array }));
  const outputs: Uint8Array[] = [];
  for (let i = 0; i < calls; i++) {
    backend.clearStats();
    backend.invoke(fn, args);
    outputs.push(arrays[2]!.read(0, c.outLength).slice());
  }
  return { outputs, counters: backend.stats().counters, backend };
}

const CONV: VtaConv2dWorkload = {
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
const CASES: { what: string; mod: () => VtaCompiledModule; c: () => VtaCase }[] = [
  { what: "matrix_multiply", mod: () => compileVta(VTA_TUTORIALS.matrix_multiply), c: () => matmulCase(VTA_TUTORIALS.matrix_multiply.workload, 1) },
  { what: "matrix_multiply_opt", mod: () => compileVta(VTA_TUTORIALS.matrix_multiply_opt), c: () => matmulCase(VTA_TUTORIALS.matrix_multiply_opt.workload, 2) },
  { what: "convolution_opt", mod: () => compileVta(VTA_TUTORIALS.convolution_opt), c: () => conv2dCase(VTA_TUTORIALS.convolution_opt.workload, 3) },
  {
    what: "conv2d 1 virtual thread",
    mod: () => vtaConv2d(CONV, { ocBlock: 1, icBlock: 1, hBlock: 4, wBlock: 8, virtualThreads: 1, storeGranularity: "channel" }),
    c: () => conv2dCase(CONV, 4),
  },
  {
    what: "conv2d stride 2",
    mod: () => vtaConv2d({ ...CONV, strideH: 2, strideW: 2, height: 9, width: 9 }, { virtualThreads: 2, storeGranularity: "row" }),
    c: () => conv2dCase({ ...CONV, strideH: 2, strideW: 2, height: 9, width: 9 }, 5),
  },
  {
    what: "conv2d 5×3 kernel, pad 2×0, no epilogue",
    mod: () => vtaConv2d({ ...CONV, padH: 2, padW: 0, kernelH: 5, kernelW: 3, height: 6, width: 7, shift: 0, clip: null }, { icBlock: 2 }),
    c: () => conv2dCase({ ...CONV, padH: 2, padW: 0, kernelH: 5, kernelW: 3, height: 6, width: 7, shift: 0, clip: null }, 6),
  },
  {
    what: "matmul 4×64 · 64×96, 2 virtual threads",
    mod: () =>
      vtaMatmul(
        { batch: 4, inFeatures: 64, outFeatures: 96, shift: 5, clip: [-100, 100] },
        { batchBlock: 2, inBlock: 2, outBlock: 3, virtualThreads: 2, storeGranularity: "element" },
      ),
    c: () => matmulCase({ batch: 4, inFeatures: 64, outFeatures: 96, shift: 5, clip: [-100, 100] }, 7),
  },
];

describe("the mmio VTA board on the device model", () => {
  it("gives bit-identical outputs and the same statistics as the simulator: the tutorials and other shapes, three calls each", () => {
    for (const { what, mod: make, c: makeCase } of CASES) {
      const mod = make();
      const c = makeCase();
      const sim = runVtaFunction(mod.program, mod.functions[0]!.name, [...c.inputs, new Int8Array(c.outLength)].map(bytes));
      const model = onModel(mod, c, 3);
      for (const [i, out] of model.outputs.entries())
        assert.deepEqual(out, sim.outputs[2]!.subarray(0, c.outLength), `${what}: call ${i} equals the simulator's output byte for byte`);
      assert.deepEqual(tvmCounters(model.counters), tvmCounters(sim.counters), `${what}: TVM's statistics`);
      assert.deepEqual(tvmCounters(model.counters), mod.kernels[0]!.stats, `${what}: the compiler's count`);
      assert.ok(model.counters.device_ns_total! > 0, `${what}: timed by the clock around the done poll`);
      assert.equal(model.backend.model!.runs, 3 * mod.program.functions[mod.functions[0]!.name]!.runs.length, `${what}: every run went through the registers`);
    }
  });

  it("the driver writes the registers in the order of TVM's Pynq driver", () => {
    const model = new VtaDeviceModel();
    const log: string[] = [];
    const base = model.target.baseAddress;
    const name = (phys: number) => registerName(MODULES[Math.floor((phys - base) / VTA_IP_REG_MAP_RANGE)]!, (phys - base) % VTA_IP_REG_MAP_RANGE);
    const bus: RegisterBus = {
      read32: (phys) => model.read32(phys),
      write32: (phys, v) => {
        log.push(`${name(phys)} = 0x${v.toString(16)}`);
        model.write32(phys, v);
      },
      close: () => {},
    };
    const insns = model.alloc(16);
    insns.bytes.set(encodeInsn({ opcode: OPCODE.FINISH, ...NO_DEPS }, hw));
    insns.flushForDevice();
    const timing = new VtaMmioDriver(bus, model.target).run(insns.phys, 1);
    assert.deepEqual(log, [
      "fetch+0x10 (insnCount) = 0x1",
      `fetch+0x18 (insnAddr) = 0x${insns.phys.toString(16)}`,
      "load+0x10 (inpAddr) = 0x0",
      "load+0x18 (wgtAddr) = 0x0",
      "compute+0x20 (uopAddr) = 0x0",
      "compute+0x28 (biasAddr) = 0x0",
      "store+0x10 (outAddr) = 0x0",
      "fetch+0x00 (control) = 0x1",
      "load+0x00 (control) = 0x81",
      "compute+0x00 (control) = 0x81",
      "store+0x00 (control) = 0x81",
      "load+0x00 (control) = 0x0",
      "compute+0x00 (control) = 0x0",
      "store+0x00 (control) = 0x0",
    ]);
    assert.ok(timing.polls >= 2, `done came after ${timing.polls} polls`);
  });

  describe("the model names each offence", () => {
    const reg = (model: VtaDeviceModel, m: number, offset: number) => model.target.baseAddress + m * VTA_IP_REG_MAP_RANGE + offset;

    it("registers outside the map", () => {
      const model = new VtaDeviceModel();
      assert.throws(
        () => model.read32(reg(model, 1, 0x24)),
        isFarmError("RUNTIME_ERROR", /VTA device model: read of unmapped register load\+0x24 \(0x43c01024\)/),
      );
      assert.throws(
        () => model.write32(0x1000, 1),
        isFarmError("RUNTIME_ERROR", /write at 0x00001000, outside VTA's register windows \[0x43c00000, 0x43c04000\)/),
      );
    });

    it("a start without an instruction address, and an instruction fetch outside allocated memory", () => {
      const model = new VtaDeviceModel();
      model.write32(reg(model, 0, 0x10), 1);
      assert.throws(
        () => model.write32(reg(model, 0, 0), 1),
        isFarmError("RUNTIME_ERROR", /fetch started without an instruction address \(fetch\+0x18 is 0\)/),
      );
      model.write32(reg(model, 0, 0x18), 0x2000_0000);
      model.write32(reg(model, 0, 0), 1);
      for (const m of [1, 2]) model.write32(reg(model, m, 0), 0x81);
      assert.throws(
        () => model.write32(reg(model, 3, 0), 0x81),
        isFarmError("RUNTIME_ERROR", /instruction fetch of 1 instructions at \[0x20000000, 0x20000010\) lies outside allocated memory/),
      );
    });

    it("a DMA outside allocated memory", () => {
      const model = new VtaDeviceModel();
      const insns = model.alloc(32);
      const load = {
        opcode: OPCODE.LOAD,
        memoryType: MEM.INP,
        ...NO_DEPS,
        sramBase: 0,
        dramBase: 0x3000_0000 / hw.inpElemBytes,
        ySize: 1,
        xSize: 1,
        xStride: 1,
        yPad0: 0,
        yPad1: 0,
        xPad0: 0,
        xPad1: 0,
      } as const;
      insns.bytes.set(encodeInsn(load, hw), 0);
      insns.bytes.set(encodeInsn({ opcode: OPCODE.FINISH, ...NO_DEPS }, hw), 16);
      insns.flushForDevice();
      const driver = new VtaMmioDriver(model, model.target);
      assert.throws(
        () => driver.run(insns.phys, 2),
        isFarmError("RUNTIME_ERROR", /VTA device model: .*instruction 0 \(LOAD INP\): DRAM bytes \[0x30000000, 0x30000010\).*lie outside the buffers placed/),
      );
    });

    it("the CPU reading a buffer before done, and stale bytes when it did not flush", () => {
      const model = new VtaDeviceModel({ pollsUntilDone: 3 });
      const insns = model.alloc(16);
      insns.bytes.set(encodeInsn({ opcode: OPCODE.FINISH, ...NO_DEPS }, hw));
      const out = model.alloc(16);
      // Not flushed: the device still sees zeros, as it would with the CPU's lines in its cache.
      assert.equal(model.sim.dram.find(insns.phys)!.bytes[0], 0);
      insns.flushForDevice();
      model.write32(reg(model, 0, 0x10), 1);
      model.write32(reg(model, 0, 0x18), insns.phys);
      model.write32(reg(model, 0, 0), 1);
      for (const m of [1, 2, 3]) model.write32(reg(model, m, 0), 0x81);
      assert.throws(
        () => out.invalidateForCpu(),
        isFarmError("RUNTIME_ERROR", /invalidate of the buffer at 0x[0-9a-f]+ while a run is in flight \(before compute's done register read 1\)/),
      );
      assert.throws(() => model.write32(reg(model, 1, 0), 0), isFarmError("RUNTIME_ERROR", /load stopped \(control 0\) while a run is in flight/));
      while (model.read32(reg(model, 2, 0x18)) !== 1);
      out.invalidateForCpu();
    });
  });

  it("a device that never raises done is a TIMEOUT; the board then refuses runs and asks to be replaced", () => {
    const backend = new VtaMmioBackend({ device: "model", hang: "always", doneTimeoutMs: 50 });
    const spec = VTA_TUTORIALS.matrix_multiply;
    const t0 = Date.now();
    assert.throws(
      () => onModel(compileVta(spec), matmulCase(spec.workload, 8), 1, backend),
      isFarmError(
        "TIMEOUT",
        /did not finish a run of \d+ instructions within 50 ms \(fetch's done bit never came\); the worker will be replaced and the board re-checked by its canary/,
      ),
    );
    assert.ok(Date.now() - t0 < 5000, "the timeout is the driver's, not a hang");
    assert.equal(backend.tainted, true, "the worker serves no other session");
    assert.throws(() => onModel(compileVta(spec), matmulCase(spec.workload, 8), 1, backend), isFarmError("TIMEOUT", /did not finish an earlier run/));
  });

  it("a run longer than the instruction buffer is refused at load, naming both sizes", () => {
    const backend = new VtaMmioBackend({ device: "model", insnBufferBytes: 64 * 16 });
    const mod = compileVta(VTA_TUTORIALS.convolution_opt);
    assert.throws(
      () => backend.load(decodeBundle(mod.bytes)),
      isFarmError("LOAD_ERROR", /run 0: \d+ instructions \(\d+ bytes\) do not fit the board's instruction buffer of 64 instructions \(1024 bytes\)/),
    );
    // The board goes on: a module that fits loads and runs.
    const small = VTA_TUTORIALS.matrix_multiply;
    assert.equal(onModel(compileVta(small), matmulCase(small.workload, 9), 1, backend).outputs.length, 1);
  });

  it("an array of another board is refused", () => {
    const a = new VtaMmioBackend({ device: "model" });
    const b = new VtaMmioBackend({ device: "model" });
    const mod = compileVta(VTA_TUTORIALS.matrix_multiply);
    const fn = a.load(decodeBundle(mod.bytes)).functions.get(mod.functions[0]!.name)!;
    const args: ArgValue[] = [a.alloc(256), a.alloc(65536), b.alloc(256)].map((array) => ({ kind: "buffer", array }));
    assert.throws(() => a.invoke(fn, args), isFarmError("BAD_ARGUMENTS", /argument 2 \(C\) of .* is not an array of this VTA board/));
  });
});

describe("the Linux device layer, without a board", () => {
  it("a missing /dev/mem, a missing u-dma-buf region, no allocator at all, an unknown allocator: each named", () => {
    assert.throws(
      () => new DevMemBus(VTA_TARGETS.pynq!, "/nonexistent/mem"),
      isFarmError("DEVICE_ERROR", /cannot open \/nonexistent\/mem for VTA's registers at 0x43c00000 \(ENOENT 2\): the agent needs root/),
    );
    assert.throws(
      () => new UdmabufMemory("udmabuf9"),
      isFarmError("DEVICE_ERROR", /no u-dma-buf region udmabuf9: \/dev\/udmabuf9 or \/sys\/class\/u-dma-buf\/udmabuf9 is missing/),
    );
    assert.throws(() => openDmaMemory("auto"), isFarmError("DEVICE_ERROR", /no DMA allocator found: \/dev\/udmabuf0 is missing and cannot load libcma.so/));
    assert.throws(() => openDmaMemory("/dev/ion"), isFarmError("INVALID_ARGUMENT", /dma=\/dev\/ion: give auto, cma, or the name of a u-dma-buf region/));
  });
});

describe("a VTA board whose device hangs, in a farm", () => {
  const dir = mkdtempSync(join(tmpdir(), "kfarm-vta-hang-"));
  // Readable by the session workers, which run as uids of their own when the agent is root (docs/sandbox.md).
  chmodSync(dir, 0o755);
  const flag = join(dir, "hang");
  let farm: Awaited<ReturnType<typeof startFarm>>;
  const spec = VTA_TUTORIALS.matrix_multiply;
  const mod = compileVta(spec);
  const c = matmulCase(spec.workload, 10);
  const board = async () => (await farm.client.summary()).boards.find((b) => b.key === "vta")!;

  before(async () => {
    farm = await startFarm([`vta:model:key=vta,name=fpga,hang=${flag},done_timeout_ms=300`]);
  });
  after(async () => {
    await farm.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("fails the session's calls with TIMEOUT, replaces the worker, re-checks the board by its canary, and serves the next session", async () => {
    const first = await waitFor("the board's first canary", async () => {
      const b = await board();
      return b.last_canary ? b : undefined;
    });
    assert.equal(first.last_canary, "passed: gemm 1×16·16×16 int8 exact, statistics exact");
    const open = async () => {
      const s = await farm.client.request("vta");
      try {
        await s.upload(mod);
        const fn = (await s.loadModule(mod.name)).getFunction(mod.functions[0]!.name);
        const shape = (i: number) => mod.functions[0]!.params[i]!.shape!;
        const out = await s.array({ shape: shape(2), dtype: "int8" });
        const args = [await s.array(c.inputs[0], shape(0)), await s.array(c.inputs[1], shape(1)), out];
        return { s, fn, args, out };
      } catch (err) {
        await s.close();
        throw err;
      }
    };
    writeFileSync(flag, "");
    const hung = await open();
    try {
      await assert.rejects(
        hung.fn(...hung.args),
        isFarmError("TIMEOUT", /did not finish a run of \d+ instructions within 300 ms/, /the worker will be replaced and the board re-checked by its canary/),
      );
      await assert.rejects(hung.fn(...hung.args), isFarmError("TIMEOUT", /did not finish an earlier run/));
    } finally {
      rmSync(flag);
      await hung.s.close();
    }
    // A new worker's canary ran after the hang, and passed.
    const again = await waitFor("the board re-checked by a new worker's canary", async () => {
      const b = await board();
      return Number(b.last_canary_at_ms) > Number(first.last_canary_at_ms) && b.state === "free" ? b : undefined;
    });
    assert.equal(again.last_canary, "passed: gemm 1×16·16×16 int8 exact, statistics exact");
    const next = await open();
    try {
      await next.fn(...next.args);
      assert.equal(firstMismatch(c.unpack((await next.out.toArray()) as Int8Array), c.want), undefined, "the next session computes the right answer");
    } finally {
      await next.s.close();
    }
  });
});

describe("an FPGA board's agent", () => {
  it(
    "refuses to start where session workers cannot map /dev/mem (uids of their own), saying what to pass",
    { skip: process.getuid?.() !== 0 && "workers run on uids of their own only when the agent is root" },
    async () => {
      const r = await runCli(["agent", "--tracker", "127.0.0.1:1", "--board", "vta:pynq:key=vta,name=pynq0"]);
      assert.notEqual(r.code, 0);
      assert.match(
        r.stderr,
        /board pynq0 \(vta:pynq\) maps VTA's registers through \/dev\/mem in its session worker, which needs root; .*start the agent with --worker-uids off/,
      );
    },
  );
});

describe("programming a VTA board's FPGA, in a farm", () => {
  const dir = mkdtempSync(join(tmpdir(), "kfarm-vta-program-"));
  let farm: Awaited<ReturnType<typeof startFarm>>;
  /** TVM's vta_config.json for the default configuration, as a Pynq bitstream's companion. */
  const tvmConfig = (change: Record<string, unknown> = {}) =>
    JSON.stringify({
      TARGET: "pynq",
      HW_VER: "0.0.2",
      LOG_INP_WIDTH: 3,
      LOG_WGT_WIDTH: 3,
      LOG_ACC_WIDTH: 5,
      LOG_BATCH: 0,
      LOG_BLOCK: 4,
      LOG_UOP_BUFF_SIZE: 15,
      LOG_INP_BUFF_SIZE: 15,
      LOG_WGT_BUFF_SIZE: 18,
      LOG_ACC_BUFF_SIZE: 17,
      ...change,
    });
  const bitstream = join(dir, "vta.bin");
  const bytes = Uint8Array.from({ length: 4096 }, (_, i) => (i * 37) & 0xff);
  const sha256 = createHash("sha256").update(bytes).digest("hex");
  const boardOf = async (key: string) => (await farm.client.summary()).boards.find((b) => b.key === key)!;

  before(async () => {
    writeFileSync(bitstream, bytes);
    writeFileSync(join(dir, "vta.json"), tvmConfig());
    farm = await startFarm(["vta:model:key=vta,name=fpga", "cpu:key=cpu,name=c0"]);
  });
  after(async () => {
    await farm.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("kfarm vta program loads it and the board's bitstream label becomes its SHA-256; the board goes on running modules", async () => {
    const board = await boardOf("vta");
    assert.equal(board.labels.bitstream, undefined, "no bitstream recorded before one is loaded");
    const r = await runCli(["vta", "program", board.id, bitstream, "--tracker", farm.tracker.address]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), `${board.id}: loaded ${bitstream} (VTA ${hw.name}); label bitstream=${sha256}`);
    const after = await waitFor("the new label at the tracker", async () => {
      const b = await boardOf("vta");
      return b.labels.bitstream === sha256 && b.state === "free" ? b : undefined;
    });
    assert.deepEqual(after.labels, { vta: hw.name, device: "model", bitstream: sha256 });
    // A request for that bitstream finds the board.
    const s = await farm.client.request("vta", { labels: { bitstream: sha256 } });
    try {
      const spec = VTA_TUTORIALS.matrix_multiply;
      const mod = compileVta(spec);
      const c = matmulCase(spec.workload, 11);
      await s.upload(mod);
      const fn = (await s.loadModule(mod.name)).getFunction(mod.functions[0]!.name);
      const shape = (i: number) => mod.functions[0]!.params[i]!.shape!;
      const out = await s.array({ shape: shape(2), dtype: "int8" });
      await fn(await s.array(c.inputs[0], shape(0)), await s.array(c.inputs[1], shape(1)), out);
      assert.equal(firstMismatch(c.unpack((await out.toArray()) as Int8Array), c.want), undefined);
    } finally {
      await s.close();
    }
  });

  it("refuses a bitstream of another configuration naming both, a companion that is not TVM's config, and boards that are not VTA", async () => {
    const board = await boardOf("vta");
    const s = await farm.client.request("vta", { board: board.id });
    try {
      await assert.rejects(
        s.programFpga(new Uint8Array(16), new TextEncoder().encode(tvmConfig({ LOG_ACC_BUFF_SIZE: 16 }))),
        isFarmError(
          "TARGET_MISMATCH",
          /the bitstream's VTA configuration is 1x16_i8w8a32_15_15_18_16 \(kfarm-bitstream.json\), but this board's agent runs 1x16_i8w8a32_15_15_18_17/,
        ),
      );
      await assert.rejects(
        s.programFpga(new Uint8Array(16), new TextEncoder().encode('{"TARGET": "pynq"}')),
        isFarmError("INVALID_ARGUMENT", /kfarm-bitstream.json lacks HW_VER, LOG_INP_WIDTH, .*LOG_ACC_BUFF_SIZE/),
      );
      await assert.rejects(
        s.programFpga(new Uint8Array(16), new TextEncoder().encode("not json")),
        isFarmError("INVALID_ARGUMENT", /kfarm-bitstream.json is not JSON/),
      );
      await assert.rejects(
        s.programFpga(new Uint8Array(0), new TextEncoder().encode(tvmConfig())),
        isFarmError("INVALID_ARGUMENT", /is empty: no bitstream to load/),
      );
      await assert.rejects(s.programFpga(new Uint8Array(16)), isFarmError("INVALID_ARGUMENT", /programFpga\(bytes\) needs the configuration too/));
    } finally {
      await s.close();
    }
    assert.equal((await boardOf("vta")).labels.bitstream, sha256, "a refused bitstream leaves the label as it was");
    const cpu = await boardOf("cpu");
    const r = await runCli(["vta", "program", cpu.id, bitstream, "--tracker", farm.tracker.address]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /board .*\/c0 is a cpu board; only vta boards \(an FPGA board or its device model\) take a bitstream \[BAD_ARGUMENTS\]/);
    const s2 = await farm.client.request("cpu");
    try {
      await s2.upload(bitstream);
      await s2.upload(join(dir, "vta.json"));
      await assert.rejects(
        s2.request({ program_fpga: { bitstream: "vta.bin", config: "vta.json" } }),
        isFarmError("BAD_ARGUMENTS", /programming an FPGA is an operation of vta boards .*; this is a cpu board/),
      );
    } finally {
      await s2.close();
    }
    await assert.rejects(
      farm.client.request("vta", { board: "nobody/fpga" }),
      isFarmError("NO_BOARD", /no board nobody\/fpga serves key "vta"; boards of that key: .*\/fpga/),
    );
  });
});
