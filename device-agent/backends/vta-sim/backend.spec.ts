/**
 * The `vta-sim` Backend: bundle checks at load, calls on DRAM arrays, stats,
 * timing, bad arguments and reset — driven directly, as a session worker does.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { BUNDLE_FORMAT, BUNDLE_VERSION, FarmError, decodeBundle, encodeBundle, type ModuleBundle } from "../../../protos/index.ts";
import { DEFAULT_VTA_HARDWARE as hw, encodeVtaBinary, vtaHardware, type VtaBinary } from "../../../vta/index.ts";
import { createBackend, describeBoard, isBoardKind } from "../index.ts";
import { parseBoardFlag } from "../../agent/board-config.ts";
import { VtaSimBackend } from "./index.ts";
import { matrixMultiplyProgram, randomInt8 } from "./test-programs.ts";

const MATMUL_PARAMS: ModuleBundle["functions"][number]["params"] = [
  { name: "A", kind: "buffer", dtype: "int8" },
  { name: "B", kind: "buffer", dtype: "int8" },
  { name: "C", kind: "buffer", dtype: "int8" },
];

function bundle(binary: VtaBinary | Uint8Array, details: Record<string, string> = { hardware: hw.name }, names: readonly string[] = ["matmul"]): ModuleBundle {
  return decodeBundle(
    encodeBundle({
      format: BUNDLE_FORMAT,
      version: BUNDLE_VERSION,
      target: "vta",
      targetDetails: details,
      binary: binary instanceof Uint8Array ? binary : encodeVtaBinary(binary),
      functions: names.map((name) => ({ name, params: MATMUL_PARAMS })),
    }),
  );
}

function rejects(fn: () => unknown, code: string, ...fragments: string[]): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof FarmError, String(e));
    assert.equal(e.code, code, e.message);
    for (const f of fragments) assert.ok(e.message.includes(f), `message should name ${JSON.stringify(f)}: ${e.message}`);
    return true;
  });
}

describe("vta-sim backend", () => {
  it("is a registered board kind with the hardware as label and buffer sizes as capabilities", async () => {
    assert.ok(isBoardKind("vta-sim"));
    const b = parseBoardFlag("vta-sim:key=vta", 0);
    assert.deepEqual([b.kind, b.key], ["vta-sim", "vta"]);
    const facts = await describeBoard("vta-sim", {});
    assert.deepEqual(facts.labels, { vta: hw.name, sim: "true" });
    assert.equal(facts.capabilities.inp_buffer_bytes, String(hw.inpDepth * hw.inpElemBytes));
    assert.equal(facts.capabilities.wgt_buffer_bytes, String(hw.wgtDepth * hw.wgtElemBytes));
    const backend = await createBackend("vta-sim", { memoryBytes: 1 << 24 });
    assert.equal(backend.kind, "vta-sim");
    assert.equal(backend.memoryBytes, 1 << 24);
  });

  it("calls a function on DRAM arrays and reports TVM's counters, the cycle estimate and wall time", () => {
    const be = new VtaSimBackend();
    const mod = be.load(bundle(matrixMultiplyProgram()));
    const fn = mod.functions.get("matmul")!;
    const [a, b, c] = [256, 65536, 256].map((n) => be.alloc(n));
    a!.write(0, new Uint8Array(randomInt8(256, 1).buffer));
    b!.write(0, new Uint8Array(randomInt8(65536, 2).buffer));
    const args = [a!, b!, c!].map((array) => ({ kind: "buffer" as const, array }));
    be.invoke(fn, args);
    const s1 = be.stats();
    assert.equal(s1.counters.gemm_counter, 256);
    assert.equal(s1.counters.wgt_load_nbytes, 65536);
    assert.ok(s1.counters.cycle_count! > 0);
    assert.equal(s1.counters.calls, 1);
    assert.equal(s1.info.hardware, hw.name);
    assert.ok(
      c!.read(0, 256).some((v) => v !== 0),
      "C was written",
    );
    const ns = be.timeCalls(fn, args, 3);
    assert.ok(ns > 0);
    const s4 = be.stats();
    assert.equal(s4.counters.gemm_counter, 4 * 256, "counters are cumulative");
    assert.equal(s4.counters.cycle_count, 4 * s1.counters.cycle_count!);
    be.clearStats();
    assert.equal(be.stats().counters.gemm_counter, 0);
    assert.equal(be.stats().counters.calls, 0);
  });

  it("refuses a bundle for other hardware, a binary that is not a VTA program, and a function it lacks", () => {
    const be = new VtaSimBackend();
    const other = vtaHardware({ ...hw.config, logBlock: 5 });
    rejects(() => be.load(bundle({ ...matrixMultiplyProgram(), hardware: other.name }, { hardware: other.name })), "TARGET_MISMATCH", other.name, hw.name);
    rejects(() => be.load(bundle(new Uint8Array([1, 2, 3]))), "BAD_BUNDLE", "not a VTA program");
    rejects(() => be.load(bundle({ hardware: hw.name, functions: {} })), "LOAD_ERROR", `no function "matmul"`);
    const bad = matrixMultiplyProgram();
    (bad.functions.matmul!.runs[0] as { insns: Uint8Array }).insns = new Uint8Array(17);
    rejects(() => be.load(bundle(bad)), "LOAD_ERROR", "16-byte");
  });

  it("decodes each run once, when the module is loaded: calls and timed repeats only execute", () => {
    const be = new VtaSimBackend();
    assert.equal(be.stats().info.runs_decoded, "0");
    const program = matrixMultiplyProgram();
    const runs = program.functions.matmul!.runs.length;
    const fn = be.load(bundle(program)).functions.get("matmul")!;
    assert.equal(be.stats().info.runs_decoded, String(runs));
    const [a, b, c] = [256, 65536, 256].map((n) => be.alloc(n));
    a!.write(0, new Uint8Array(randomInt8(256, 3).buffer));
    b!.write(0, new Uint8Array(randomInt8(65536, 4).buffer));
    const args = [a!, b!, c!].map((array) => ({ kind: "buffer" as const, array }));
    be.invoke(fn, args);
    const once = Uint8Array.from(c!.read(0, 256));
    be.timeCalls(fn, args, 5);
    be.invoke(fn, args);
    const s = be.stats();
    assert.equal(s.counters.calls, 7);
    assert.equal(s.counters.gemm_counter, 7 * 256, "every call executed the whole program");
    assert.equal(s.info.runs_decoded, String(runs), "calls decoded nothing");
    assert.deepEqual(c!.read(0, 256), once, "the reused program computes the same result");
    // A second load decodes its own copy; the first module's is untouched and still runs.
    be.load(bundle(matrixMultiplyProgram()));
    assert.equal(be.stats().info.runs_decoded, String(2 * runs));
    be.invoke(fn, args);
    assert.equal(be.stats().counters.calls, 8);
  });

  it("refuses at load a module whose instruction stream is not whole instructions, naming the function and run, and keeps nothing of it", () => {
    const be = new VtaSimBackend();
    const binary = matrixMultiplyProgram();
    const good = binary.functions.matmul!;
    const run = good.runs[0]!;
    // "broken": the good run with its last instruction cut short by one byte.
    binary.functions.broken = { runs: [{ ...run, insns: run.insns.subarray(0, run.insns.byteLength - 1) }] };
    rejects(
      () => be.load(bundle(binary, undefined, ["matmul", "broken"])),
      "LOAD_ERROR",
      `function "broken", run 0`,
      `${run.insns.byteLength - 1} bytes`,
      "not a whole number of 16-byte instructions",
    );
    // The good function placed before it gave its micro-op buffer back.
    assert.equal(be.stats().counters.dram_bytes_in_use, 0);
    // The board loads and runs a sound module right after.
    const fn = be.load(bundle(matrixMultiplyProgram())).functions.get("matmul")!;
    be.invoke(
      fn,
      [256, 65536, 256].map((n) => ({ kind: "buffer" as const, array: be.alloc(n) })),
    );
    assert.equal(be.stats().counters.gemm_counter, 256);
  });

  it("refuses arguments too small for the program, naming the parameter, and other boards' arrays", () => {
    const be = new VtaSimBackend();
    const fn = be.load(bundle(matrixMultiplyProgram())).functions.get("matmul")!;
    const args = [256, 65536, 255].map((n) => ({ kind: "buffer" as const, array: be.alloc(n) }));
    rejects(() => be.invoke(fn, args), "BAD_ARGUMENTS", "argument 2 (C)", "256 bytes");
    const foreign = { kind: "buffer" as const, array: { nbytes: 256, write() {}, read: () => new Uint8Array(0), free() {} } };
    rejects(() => be.invoke(fn, [args[0]!, args[1]!, foreign]), "BAD_ARGUMENTS", "argument 2");
  });

  it("defers a corrupt instruction stream to the call, and stays usable", () => {
    const be = new VtaSimBackend();
    const broken = matrixMultiplyProgram();
    const run = broken.functions.matmul!.runs[0]!;
    run.insns[5 * 16] = (run.insns[5 * 16]! & ~7) | 6; // instruction 5: opcode 6
    const fnBad = be.load(bundle(broken)).functions.get("matmul")!;
    const fnGood = be.load(bundle(matrixMultiplyProgram())).functions.get("matmul")!;
    const args = [256, 65536, 256].map((n) => ({ kind: "buffer" as const, array: be.alloc(n) }));
    rejects(() => be.invoke(fnBad, args), "RUNTIME_ERROR", "instruction 5", "unknown opcode 6");
    be.invoke(fnGood, args);
    assert.equal(be.stats().counters.gemm_counter, 256);
  });

  it("reset frees DRAM, tokens and counters for the next session", () => {
    const be = new VtaSimBackend();
    const fn = be.load(bundle(matrixMultiplyProgram())).functions.get("matmul")!;
    const args = [256, 65536, 256].map((n) => ({ kind: "buffer" as const, array: be.alloc(n) }));
    be.invoke(fn, args);
    assert.ok(be.stats().counters.dram_bytes_in_use! > 0);
    be.reset();
    assert.equal(be.stats().counters.dram_bytes_in_use, 0);
    assert.equal(be.stats().counters.gemm_counter, 0);
    assert.ok(be.sim.core.srams.acc.every((v) => v === 0));
  });
});
