import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { MEM, NO_DEPS, OPCODE, type Insn } from "./isa.ts";
import { nopInsn } from "./insn-queue.ts";
import { VtaCommandQueue } from "./runtime.ts";
import { checkDependencies, decodeRun, streamStats } from "./stream-analysis.ts";
import { formatInsn, parseStreamText, relativeDram, runToStream } from "./stream-text.ts";
import { UOP_MODE, UopHandle } from "./uop-kernel.ts";

const SAMPLE = `
    0  NOP_STORE                                                                                  Pp
    1  LOAD_UOP sram 0 uop+0 y 1 x 2 s 2                                                          pn
    2  GEMM_RESET uop[0,2) out 8 (98,0,0) in 7 (14,0,0)                                           Pp
    3  LOAD_INP sram 144 ?+452 y 8 x 14 s 14 pad y[1,0] x[1,1]                                    pn
    4  ALU MIN imm 127 uop[282,283) out 1 (0,0) in 784 (1,1)                                      Pn,pp
    5  STORE sram 0 ?+40448 y 1 x 1 s 1                                                           pp
    6  FINISH
uops@1: (0,0,0) (1,0,0)
`;

describe("stream text (the golden-file format)", () => {
  it("parses kinds, fields, DRAM bases, flags (in canonical order) and uop lists", () => {
    const s = parseStreamText(SAMPLE);
    assert.equal(s.lines.length, 7);
    assert.deepEqual(s.lines[3], {
      index: 3,
      kind: "LOAD_INP",
      fields: "sram 144 <dram> y 8 x 14 s 14 pad y[1,0] x[1,1]",
      flags: "pn",
      dram: { space: "?", value: 452 },
    });
    assert.equal(s.lines[4]!.flags, "pp,Pn");
    assert.deepEqual(s.lines[1]!.dram, { space: "uop", value: 0 });
    assert.equal(s.lines[6]!.fields, "");
    assert.deepEqual(s.uops.get(1), [
      [0, 0, 0],
      [1, 0, 0],
    ]);
    assert.throws(() => parseStreamText("LOAD what"), /line 1/);
  });

  it("formats instructions the same way, so runs and golden files compare field by field", () => {
    const insn: Insn = {
      opcode: OPCODE.LOAD,
      ...NO_DEPS,
      popNext: true,
      memoryType: MEM.INP,
      sramBase: 144,
      dramBase: 452,
      ySize: 8,
      xSize: 14,
      xStride: 14,
      yPad0: 1,
      yPad1: 0,
      xPad0: 1,
      xPad1: 1,
    };
    const line = formatInsn(3, insn);
    const back = parseStreamText(line).lines[0]!;
    assert.deepEqual(back, parseStreamText(SAMPLE).lines[3]);
    assert.match(formatInsn(0, { ...nopInsn(3), pushPrev: true }), /^\s+0 {2}NOP_STORE\s+Pp$/);
  });

  it("relative DRAM bases per address space", () => {
    const s = parseStreamText("0 LOAD_INP sram 0 ?+10 y 1 x 1 s 1\n1 LOAD_WGT sram 0 ?+500 y 1 x 1 s 1\n2 LOAD_INP sram 0 ?+14 y 1 x 1 s 1");
    assert.deepEqual(
      relativeDram(s.lines, (l) => l.kind),
      [0, 0, 4],
    );
  });

  it("runToStream names each DRAM base's buffer and reads the uops each LOAD UOP loads", () => {
    const cmd = new VtaCommandQueue();
    cmd.loadBuffer2D(1, 5, 2, 1, 2, 0, 0, 0, 0, 0, MEM.INP);
    cmd.pushGemmOp(new UopHandle(), () => {
      cmd.uopPush(UOP_MODE.GEMM, false, 3, 4, 5);
      cmd.uopPush(UOP_MODE.GEMM, false, 4, 5, 6);
    });
    const s = runToStream(cmd.synchronize());
    assert.deepEqual(s.lines[0]!.dram, { space: "arg1", value: 5 });
    assert.deepEqual(s.lines[1]!.dram, { space: "uop", value: 0 });
    assert.deepEqual(s.uops.get(1), [
      [3, 4, 5],
      [4, 5, 6],
    ]);
  });
});

describe("stream analysis", () => {
  it("counts as the simulator does: padding and NOPs not counted, reset GEMMs count 0", () => {
    const cmd = new VtaCommandQueue();
    cmd.loadBuffer2D(0, 0, 14, 8, 14, 1, 1, 1, 0, 0, MEM.INP);
    cmd.loadBuffer2D(1, 0, 9, 8, 144, 0, 0, 0, 0, 0, MEM.WGT);
    cmd.loadBuffer2D(2, 0, 4, 1, 4, 0, 0, 0, 0, 0, MEM.ACC_8BIT);
    cmd.pushGemmOp(new UopHandle(), () => {
      cmd.uopLoopBegin(8, 98, 0, 0);
      cmd.uopPush(UOP_MODE.GEMM, true, 0, 0, 0);
      cmd.uopPush(UOP_MODE.GEMM, true, 1, 0, 0);
      cmd.uopLoopEnd();
    });
    cmd.pushGemmOp(new UopHandle(), () => {
      cmd.uopLoopBegin(8, 98, 0, 9);
      cmd.uopLoopBegin(7, 14, 16, 0);
      for (let j = 0; j < 3; j++) cmd.uopPush(UOP_MODE.GEMM, false, j, j, 0);
      cmd.uopLoopEnd();
      cmd.uopLoopEnd();
    });
    cmd.pushAluOp(new UopHandle(), () => {
      cmd.uopLoopBegin(784, 1, 1, 0);
      cmd.uopPush(UOP_MODE.ALU, false, 0, 0, 0, 3, true, 8);
      cmd.uopLoopEnd();
    });
    cmd.storeBuffer2D(0, MEM.OUT, 3, 0, 7, 2, 7);
    const stats = streamStats([cmd.synchronize()]);
    assert.deepEqual(stats, {
      inp_load_nbytes: 14 * 8 * 16,
      wgt_load_nbytes: 9 * 8 * 256,
      acc_load_nbytes: 4 * 64,
      uop_load_nbytes: (2 + 3 + 1) * 4,
      out_store_nbytes: 14 * 16,
      gemm_counter: 8 * 7 * 3,
      alu_counter: 784,
    });
  });

  it("finds a deadlock and names the waiting instruction and queue", () => {
    const cmd = new VtaCommandQueue();
    cmd.depPop(2, 1); // the load waits for a compute token nobody pushes
    cmd.loadBuffer2D(0, 0, 1, 1, 1, 0, 0, 0, 0, 0, MEM.INP);
    const check = checkDependencies(decodeRun(cmd.synchronize()));
    assert.equal(check.ok, false);
    assert.ok(!check.ok && check.blocked.some((b) => b.insn === 0 && b.module === "load" && b.waitsFor === "g2l"), JSON.stringify(check));
  });

  it("reports tokens left over, and accepts tokens carried in from an earlier run", () => {
    const cmd = new VtaCommandQueue();
    cmd.depPush(3, 2);
    const insns = decodeRun(cmd.synchronize());
    const check = checkDependencies(insns);
    assert.ok(check.ok);
    assert.equal(check.left.s2g, 1);
    const c2 = new VtaCommandQueue();
    c2.depPop(3, 2);
    c2.depPush(2, 1);
    assert.equal(checkDependencies(decodeRun(c2.synchronize())).ok, false);
    const c3 = new VtaCommandQueue();
    c3.depPop(3, 2);
    assert.equal(checkDependencies(decodeRun(c3.synchronize()), { s2g: 1 }).ok, true);
  });
});
