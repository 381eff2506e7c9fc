import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ALU_OP, MEM, OPCODE } from "./isa.ts";
import { UOP_BUFFER, type VtaRun } from "./program.ts";
import { VTA_DEBUG, VtaCommandQueue } from "./runtime.ts";
import { VtaRuntimeError } from "./runtime-error.ts";
import { checkDependencies, decodeRun, streamStats } from "./stream-analysis.ts";
import { runToStream } from "./stream-text.ts";
import { UOP_MODE, UopHandle } from "./uop-kernel.ts";

/** "KIND flags" per instruction: the shape of a stream at a glance. */
function shape(run: VtaRun): string[] {
  return runToStream(run).lines.map((l) => `${l.kind}${l.flags ? " " + l.flags : ""}`);
}

const EPILOGUE_FROM_EMPTY = ["NOP_STORE Pp", "NOP_MEMORY Pn", "NOP_COMPUTE pp,pn", "FINISH"];

function loadInp(cmd: VtaCommandQueue, offset = 0): void {
  cmd.loadBuffer2D(0, offset, 1, 1, 1, 0, 0, 0, 0, 0, MEM.INP);
}

function gemm(cmd: VtaCommandQueue, site: UopHandle, signature?: number, uops = 1): void {
  cmd.pushGemmOp(
    site,
    () => {
      cmd.uopLoopBegin(16, 1, 0, 1);
      for (let i = 0; i < uops; i++) cmd.uopPush(UOP_MODE.GEMM, false, i, 0, 0);
      cmd.uopLoopEnd();
    },
    signature,
  );
}

function expectRuntimeError(fn: () => void, code: string, pattern: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof VtaRuntimeError, `expected VtaRuntimeError, got ${String(err)}`);
    assert.equal(err.code, code);
    assert.match(err.message, pattern);
    return true;
  });
}

describe("VTA runtime: dependency flags and NOPs", () => {
  it("synchronize on an empty queue emits the fixed epilogue and FINISH", () => {
    const cmd = new VtaCommandQueue();
    assert.deepEqual(shape(cmd.synchronize()), EPILOGUE_FROM_EMPTY);
  });

  it("a push with no instruction of its stage becomes a NOP; a second push cannot reuse a set flag", () => {
    const cmd = new VtaCommandQueue();
    cmd.depPush(3, 2);
    cmd.depPush(3, 2);
    const run = cmd.synchronize();
    // The epilogue's own push(3→2) finds the last NOP-STORE's push_prev taken too.
    assert.deepEqual(shape(run), ["NOP_STORE Pp", "NOP_STORE Pp", "NOP_STORE Pp", "NOP_MEMORY Pn", "NOP_COMPUTE pp,pn", "FINISH"]);
    const nop = decodeRun(run)[0]!;
    assert.equal(nop.opcode, OPCODE.STORE);
    assert.ok(nop.opcode === OPCODE.STORE && nop.memoryType === MEM.UOP && nop.xSize === 0);
  });

  it("a push merges into the last instruction when it belongs to the pushing stage", () => {
    const cmd = new VtaCommandQueue();
    loadInp(cmd);
    cmd.depPush(1, 2);
    cmd.depPop(1, 2);
    gemm(cmd, new UopHandle());
    cmd.depPush(2, 1);
    const lines = shape(cmd.synchronize());
    assert.deepEqual(lines.slice(0, 3), ["LOAD_INP Pn", "LOAD_UOP pp", "GEMM Pp"]);
  });

  it("pops wait for the next instruction of their stage, and a repeated pop commits the first as a NOP", () => {
    const cmd = new VtaCommandQueue();
    cmd.depPop(2, 1);
    cmd.depPop(2, 1);
    loadInp(cmd);
    const lines = shape(cmd.synchronize());
    assert.deepEqual(lines.slice(0, 2), ["NOP_MEMORY pn", "LOAD_INP pn"]);
  });

  it("a push commits the pushing stage's pending pops first", () => {
    const cmd = new VtaCommandQueue();
    cmd.depPop(3, 2);
    cmd.depPush(2, 1);
    assert.deepEqual(shape(cmd.synchronize()).slice(0, 2), ["NOP_COMPUTE pn", "NOP_COMPUTE Pp"]);
  });

  it("a NOP load has no stage, so a push never merges into it; a NOP store does absorb push_prev", () => {
    const cmd = new VtaCommandQueue();
    cmd.depPop(2, 1);
    cmd.depPush(1, 2); // commits NOP_MEMORY pn, then cannot merge into it
    cmd.depPop(2, 3);
    cmd.depPush(3, 2); // commits NOP_STORE pp, then merges Pp into it
    assert.deepEqual(shape(cmd.synchronize()).slice(0, 3), ["NOP_MEMORY pn", "NOP_MEMORY Pn", "NOP_STORE pp,Pp"]);
  });

  it("refuses dependencies between load and store, and unknown queues", () => {
    const cmd = new VtaCommandQueue();
    expectRuntimeError(() => cmd.depPush(1, 3), "DEPENDENCE", /load.*store/);
    expectRuntimeError(() => cmd.depPop(3, 1), "DEPENDENCE", /store.*load/);
    expectRuntimeError(() => cmd.depPop(4 as 1, 2), "DEPENDENCE", /queue 4/);
  });

  it("the token protocol of an emitted stream balances (checkDependencies)", () => {
    const cmd = new VtaCommandQueue();
    const site = new UopHandle();
    for (let i = 0; i < 3; i++) {
      if (i > 0) cmd.depPop(2, 1);
      loadInp(cmd, i);
      cmd.depPush(1, 2);
      cmd.depPop(1, 2);
      gemm(cmd, site);
      cmd.depPush(2, 1);
    }
    cmd.depPop(2, 1);
    const run = cmd.synchronize();
    const check = checkDependencies(decodeRun(run));
    assert.ok(check.ok, JSON.stringify(check));
    assert.deepEqual(check.left, { l2g: 0, g2l: 0, s2g: 0, g2s: 0 });
  });
});

describe("VTA runtime: uop kernels and the uop cache", () => {
  it("records a kernel once per site and key, and loads it once per run", () => {
    const cmd = new VtaCommandQueue();
    const site = new UopHandle("conv");
    let recorded = 0;
    const push = (sig?: number) =>
      cmd.pushGemmOp(
        site,
        (s) => {
          recorded++;
          cmd.uopPush(UOP_MODE.GEMM, false, 10 * (s ?? 0), 0, 0);
        },
        sig,
      );
    push(0);
    push(1);
    push(0);
    push(1);
    const first = cmd.synchronize();
    assert.equal(recorded, 2);
    assert.deepEqual(shape(first).slice(0, 6), ["LOAD_UOP", "GEMM", "LOAD_UOP", "GEMM", "GEMM", "GEMM"]);
    push(1);
    const second = cmd.synchronize();
    assert.equal(recorded, 2, "a recorded kernel is never recorded again");
    assert.deepEqual(shape(second).slice(0, 2), ["LOAD_UOP", "GEMM"], "the cache is invalidated at synchronize");
    const s = runToStream(second);
    assert.deepEqual(s.uops.get(0), [[10, 0, 0]]);
    assert.deepEqual(second.relocations, [{ insn: 0, buffer: UOP_BUFFER }]);
  });

  it("maps one uop loop to the GEMM's outer loop but the ALU's inner loop", () => {
    const cmd = new VtaCommandQueue();
    cmd.pushGemmOp(new UopHandle(), () => {
      cmd.uopLoopBegin(16, 1, 0, 1);
      cmd.uopPush(UOP_MODE.GEMM, false, 0, 0, 0);
      cmd.uopLoopEnd();
    });
    cmd.pushAluOp(new UopHandle(), () => {
      cmd.uopLoopBegin(16, 1, 1, 0);
      cmd.uopPush(UOP_MODE.ALU, false, 0, 0, 0, ALU_OP.SHR, true, -3);
      cmd.uopLoopEnd();
    });
    const insns = decodeRun(cmd.synchronize());
    const g = insns[1]!;
    const a = insns[3]!;
    assert.ok(g.opcode === OPCODE.GEMM && a.opcode === OPCODE.ALU);
    assert.deepEqual([g.iterOut, g.dstFactorOut, g.wgtFactorOut, g.iterIn], [16, 1, 1, 1]);
    assert.deepEqual([a.iterOut, a.iterIn, a.dstFactorIn, a.srcFactorIn, a.aluOpcode, a.useImm, a.imm], [1, 16, 1, 1, ALU_OP.SHR, true, -3]);
  });

  it("enforces the recording rules: ≤ 2 loops before the first uop, VerifyDep, one mode and ALU op per kernel", () => {
    const cmd = new VtaCommandQueue();
    expectRuntimeError(() => cmd.uopPush(UOP_MODE.GEMM, false, 0, 0, 0), "UOP_RECORDING", /outside a uop kernel/);
    expectRuntimeError(
      () =>
        cmd.pushGemmOp(new UopHandle(), () => {
          cmd.uopLoopBegin(2, 1, 0, 0);
          cmd.uopLoopBegin(2, 1, 0, 0);
          cmd.uopLoopBegin(2, 1, 0, 0);
        }),
      "UOP_RECORDING",
      /at most 2 loops/,
    );
    expectRuntimeError(
      () =>
        cmd.pushGemmOp(new UopHandle(), () => {
          cmd.uopPush(UOP_MODE.GEMM, false, 0, 0, 0);
          cmd.uopLoopBegin(2, 1, 0, 0);
        }),
      "UOP_RECORDING",
      /after the kernel's first uop/,
    );
    expectRuntimeError(
      () =>
        cmd.pushGemmOp(new UopHandle(), () => {
          cmd.uopPush(UOP_MODE.GEMM, false, 0, 0, 0);
          cmd.uopPush(UOP_MODE.GEMM, false, 1, 0, 0);
          cmd.uopPush(UOP_MODE.GEMM, false, 0, 1, 0);
        }),
      "UOP_DEPENDENCE",
      /ACC index 0.*VerifyDep/,
    );
    // Three uops apart is fine.
    cmd.pushGemmOp(new UopHandle(), () => {
      for (const d of [0, 1, 2, 0]) cmd.uopPush(UOP_MODE.GEMM, false, d, 0, 0);
    });
    expectRuntimeError(
      () =>
        cmd.pushAluOp(new UopHandle(), () => {
          cmd.uopPush(UOP_MODE.ALU, false, 0, 0, 0, ALU_OP.MAX, true, 0);
          cmd.uopPush(UOP_MODE.ALU, false, 1, 1, 0, ALU_OP.MIN, true, 0);
        }),
      "UOP_MISMATCH",
      /one ALU kernel is one operation/,
    );
    expectRuntimeError(
      () =>
        cmd.pushGemmOp(new UopHandle(), () => {
          cmd.uopPush(UOP_MODE.GEMM, true, 0, 0, 0);
          cmd.uopPush(UOP_MODE.GEMM, false, 1, 0, 0);
        }),
      "UOP_MISMATCH",
      /reset_out/,
    );
  });

  it("keys kernels by signature + 1 and refuses keys from 100 on", () => {
    const cmd = new VtaCommandQueue();
    const site = new UopHandle();
    gemm(cmd, site, 98);
    expectRuntimeError(() => gemm(cmd, site, 99), "UOP_KERNEL", /key 100/);
    expectRuntimeError(() => gemm(cmd, site, 1.5), "UOP_KERNEL", /not one int32/);
  });

  it("fills the uop SRAM like a ring: wraps to 0, evicts what it overwrites, reloads evicted kernels", () => {
    const cmd = new VtaCommandQueue();
    const kernel = (size: number, tag: number) => {
      const site = new UopHandle(`k${tag}`);
      return () =>
        cmd.pushGemmOp(site, () => {
          for (let i = 0; i < size; i++) cmd.uopPush(UOP_MODE.GEMM, false, i % 2000, tag, 0);
        });
    };
    const a = kernel(5000, 1);
    const b = kernel(3000, 2);
    const c = kernel(4000, 3);
    a(); // [0, 5000)
    b(); // [5000, 8000)
    c(); // wraps: [0, 4000), evicts a
    b(); // still resident: no load
    a(); // [4000, 9000) does not fit: wraps to [0, 5000), evicts c
    const run = cmd.synchronize();
    const s = runToStream(run);
    const loads = s.lines.filter((l) => l.kind === "LOAD_UOP").map((l) => l.fields.replace(" <dram>", ""));
    assert.deepEqual(loads, ["sram 0 y 1 x 5000 s 5000", "sram 5000 y 1 x 3000 s 3000", "sram 0 y 1 x 4000 s 4000", "sram 0 y 1 x 5000 s 5000"]);
    const gemms = s.lines.filter((l) => l.kind === "GEMM").map((l) => l.fields.split(" ")[0]);
    assert.deepEqual(gemms, ["uop[0,5000)", "uop[5000,8000)", "uop[0,4000)", "uop[5000,8000)", "uop[0,5000)"]);
    // Every LOAD UOP reads its own kernel's uops from the DMA buffer.
    for (const [i, uops] of s.uops) {
      const tag = uops[0]![1];
      assert.ok(
        uops.every((u) => u[1] === tag),
        `load ${i} mixes kernels`,
      );
    }
    assert.deepEqual(
      [...s.uops.values()].map((u) => u[0]![1]),
      [1, 2, 3, 1],
    );
    assert.equal(streamStats([run]).uop_load_nbytes, (5000 + 3000 + 4000 + 5000) * 4);
  });

  it("synchronizes on its own before the instruction buffer overflows", () => {
    const cmd = new VtaCommandQueue({ maxXferBytes: 16 * 20 });
    for (let i = 0; i < 30; i++) loadInp(cmd, i);
    cmd.synchronize();
    const runs = cmd.takeRuns();
    assert.ok(runs.length >= 2, `expected several runs, got ${runs.length}`);
    let loads = 0;
    for (const run of runs) {
      const insns = decodeRun(run);
      assert.ok(insns.length * 16 <= 16 * 20);
      assert.equal(insns[insns.length - 1]!.opcode, OPCODE.FINISH);
      loads += insns.filter((x) => x.opcode === OPCODE.LOAD && x.xSize > 0).length;
      assert.ok(checkDependencies(insns).ok);
    }
    assert.equal(loads, 30);
  });

  it("records relocations for every LOAD and STORE that moves data, none for NOPs", () => {
    const cmd = new VtaCommandQueue();
    cmd.loadBuffer2D(2, 7, 3, 2, 10, 1, 0, 1, 0, 5, MEM.WGT);
    cmd.depPop(3, 2);
    cmd.loadBuffer2D(1, 0, 4, 1, 4, 0, 0, 0, 0, 0, MEM.ACC);
    cmd.storeBuffer2D(0, MEM.OUT, 3, 9, 4, 1, 4);
    const run = cmd.synchronize();
    const lines = runToStream(run).lines;
    assert.deepEqual(run.relocations, [
      { insn: 0, buffer: 2 },
      { insn: 1, buffer: 1 },
      { insn: 2, buffer: 3 },
    ]);
    assert.equal(lines[0]!.fields, "sram 5 <dram> y 2 x 3 s 10 pad y[0,0] x[1,1]");
    assert.equal(lines[1]!.flags, "pn", "an ACC load is a compute-stage instruction and takes compute pops");
    assert.deepEqual(lines[2]!.dram, { space: "arg3", value: 9 });
  });

  it("refuses values that do not fit their fields, naming the field", () => {
    const cmd = new VtaCommandQueue();
    expectRuntimeError(() => cmd.loadBuffer2D(0, 0, 1, 1, 1, 16, 0, 0, 0, 0, MEM.INP), "FIELD_RANGE", /xPad0 = 16/);
    expectRuntimeError(() => cmd.pushGemmOp(new UopHandle(), () => cmd.uopPush(UOP_MODE.GEMM, false, 2048, 0, 0)), "FIELD_RANGE", /dst index 2048/);
  });

  it("FORCE_SERIAL rewrites the flags so that every module waits for the previous instruction", () => {
    const cmd = new VtaCommandQueue({ debugFlags: VTA_DEBUG.FORCE_SERIAL });
    loadInp(cmd);
    gemm(cmd, new UopHandle());
    cmd.storeBuffer2D(0, MEM.OUT, 1, 0, 1, 1, 1);
    const run = cmd.synchronize();
    const insns = decodeRun(run);
    assert.deepEqual(shape(run).slice(0, 4), ["LOAD_INP Pn", "LOAD_UOP pp", "GEMM Pn", "STORE pp,Pp"]);
    const check = checkDependencies(insns);
    assert.ok(check.ok, JSON.stringify(check));
  });
});
