/**
 * The three modules and their dependency-token FIFOs: tokens order execution
 * across modules, persist across runs, and a program that deadlocks, sets a
 * flag its module does not have, or is otherwise malformed fails with an error
 * naming the instruction — after which the simulator still works.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DEFAULT_VTA_HARDWARE as hw, MEM, UOP_BUFFER } from "../../../vta/index.ts";
import { FarmError } from "../../../protos/index.ts";
import { VtaSimulator, runVtaFunction } from "../vta-sim/index.ts";
import { binaryOf, insn, randomInt8, rawRun } from "../vta-sim/test-programs.ts";

function rejects(fn: () => unknown, ...patterns: RegExp[]): FarmError {
  let err: unknown;
  try {
    fn();
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof FarmError, `expected a FarmError, got ${String(err)}`);
  assert.equal(err.code, "RUNTIME_ERROR", err.message);
  for (const p of patterns) assert.match(err.message, p);
  return err;
}

/** A run that only ends: FINISH with the given flags. */
const finishOnly = (f: Parameters<typeof insn.finish>[0] = {}) => rawRun([insn.finish(f)]);

describe("dependency tokens", () => {
  it("order the modules: compute reads the first INP tile before load overwrites it", () => {
    const inpLanes = hw.batch * hw.blockIn;
    const wgtLanes = hw.blockOut * hw.blockIn;
    const data = randomInt8(2 * inpLanes, 3);
    const weights = randomInt8(wgtLanes, 4);
    const program = binaryOf([
      rawRun(
        [
          insn.load(MEM.WGT, {}), // 0 load
          insn.load(MEM.INP, { dramBase: 0, pushNext: true }), // 1 load: tile 0 → INP[0], then l2g
          insn.load(MEM.INP, { dramBase: 1, popNext: true, pushNext: true }), // 2 load: waits for g2l, tile 1 → INP[0]
          insn.load(MEM.UOP, { xSize: 2, xStride: 2 }), // 3 compute
          insn.gemm({ resetReg: true, uopEnd: 2 }), // 4 compute: ACC[0], ACC[1] = 0
          insn.gemm({ uopBgn: 0, uopEnd: 1, popPrev: true, pushPrev: true }), // 5: ACC[0] += INP[0]·W, then g2l
          insn.gemm({ uopBgn: 1, uopEnd: 2, popPrev: true }), // 6: ACC[1] += INP[0]·W
          insn.finish(),
        ],
        [
          [0, 1],
          [1, 0],
          [2, 0],
          [3, UOP_BUFFER],
        ],
        [
          { dst: 0, src: 0, wgt: 0 },
          { dst: 1, src: 0, wgt: 0 },
        ],
      ),
    ]);
    const sim = new VtaSimulator();
    runVtaFunction(program, "f", [new Uint8Array(data.buffer), new Uint8Array(weights.buffer)], { simulator: sim });
    for (const tile of [0, 1]) {
      for (let j = 0; j < hw.blockOut; j++) {
        let want = 0;
        for (let k = 0; k < hw.blockIn; k++) want += data[tile * inpLanes + k]! * weights[j * hw.blockIn + k]!;
        assert.equal(sim.core.srams.acc[tile * hw.blockOut + j], want, `ACC[${tile}] lane ${j} must use INP tile ${tile}`);
      }
    }
    assert.deepEqual(sim.tokens.counts(), { l2g: 0, g2l: 0, s2g: 0, g2s: 0 });
  });

  it("a deadlock fails naming each waiting instruction and its empty queue", () => {
    const program = binaryOf([
      rawRun([
        insn.load(MEM.INP, { xSize: 0, popNext: true }), // 0 load waits on g2l
        insn.gemm({ uopEnd: 0, popPrev: true, pushPrev: true }), // 1 compute waits on l2g
        insn.store({ xSize: 0, memoryType: MEM.UOP }), // 2 store: free to run
        insn.finish(),
      ]),
    ]);
    rejects(
      () => runVtaFunction(program, "f", []),
      /deadlock/,
      /load module waits at instruction 0 \(NOP-MEMORY\) for a token on g2l/,
      /compute module waits at instruction 1 \(GEMM\) for a token on l2g/,
      /store module has run all its instructions/,
    );
  });

  it("flags a module does not have are refused, naming the instruction and the flag", () => {
    const cases: [Parameters<typeof insn.load>[1] & object, "load" | "store", RegExp][] = [
      [{ popPrev: true }, "load", /instruction 0 \(LOAD INP\): sets pop_prev, but the load module has no previous module/],
      [{ pushPrev: true }, "load", /instruction 0 \(LOAD INP\): sets push_prev/],
      [{ popNext: true }, "store", /instruction 0 \(STORE\): sets pop_next, but the store module has no next module/],
      [{ pushNext: true }, "store", /instruction 0 \(STORE\): sets push_next/],
    ];
    for (const [flags, kind, pattern] of cases) {
      const first = kind === "load" ? insn.load(MEM.INP, flags) : insn.store(flags);
      rejects(() => runVtaFunction(binaryOf([rawRun([first, insn.finish()], [[0, 0]])]), "f", [new Uint8Array(4096)]), pattern);
    }
  });

  it("persist across the runs of a call; a call that leaves any behind is refused, naming each queue and its count", () => {
    const sim = new VtaSimulator();
    const leave = binaryOf([rawRun([insn.store({ xSize: 0, memoryType: MEM.UOP, pushPrev: true }), insn.finish()])], "leave");
    const take = binaryOf([finishOnly({ popNext: true })], "take");
    // Two runs of one function: the second consumes the token the first left.
    runVtaFunction(binaryOf([leave.functions.leave!.runs[0]!, take.functions.take!.runs[0]!]), "f", [], { simulator: sim });
    assert.deepEqual(sim.tokens.counts(), { l2g: 0, g2l: 0, s2g: 0, g2s: 0 });
    // Without a leftover token, "take" deadlocks.
    rejects(() => runVtaFunction(take, "take", [], { simulator: sim }), /deadlock/, /instruction 0 \(FINISH\)/, /s2g/);
    // A call that ends with a token queued would hand it to the next call: refused, and the FIFOs emptied.
    rejects(
      () => runVtaFunction(binaryOf([leave.functions.leave!.runs[0]!, leave.functions.leave!.runs[0]!], "leave"), "leave", [], { simulator: sim }),
      /VTA function "leave": its last FINISH left dependency tokens behind — 2 on s2g \(store → compute\); a later call would pop them/,
    );
    assert.deepEqual(sim.tokens.counts(), { l2g: 0, g2l: 0, s2g: 0, g2s: 0 });
    // The refused call's tokens are not there for the next.
    rejects(() => runVtaFunction(take, "take", [], { simulator: sim }), /deadlock/);
    // A failing run (here a deadlock on l2g) leaves the FIFOs empty for the next call.
    rejects(() => runVtaFunction(binaryOf([finishOnly({ popPrev: true })]), "f", [], { simulator: sim }), /l2g/);
    assert.deepEqual(sim.tokens.counts(), { l2g: 0, g2l: 0, s2g: 0, g2s: 0 });
  });

  it("an unknown opcode fails naming the instruction", () => {
    const run = rawRun([insn.finish(), insn.finish(), insn.finish()]);
    run.insns[16] = (run.insns[16]! & ~7) | 7;
    rejects(() => runVtaFunction(binaryOf([run]), "f", []), /instruction 1 /, /unknown opcode 7/);
  });

  it("a run without FINISH, or with instructions left after it, fails", () => {
    rejects(() => runVtaFunction(binaryOf([rawRun([insn.gemm({ uopEnd: 0 })])]), "f", []), /no FINISH/);
    rejects(
      () => runVtaFunction(binaryOf([rawRun([insn.finish(), insn.gemm({ uopEnd: 0 })])]), "f", []),
      /FINISH ran while instructions were still pending/,
      /compute module has instruction 1 \(GEMM\) left/,
    );
  });

  it("the simulator keeps working after a failed call", () => {
    const sim = new VtaSimulator();
    rejects(() => runVtaFunction(binaryOf([finishOnly({ popPrev: true })]), "f", [], { simulator: sim }), /deadlock/);
    const r = runVtaFunction(
      binaryOf([rawRun([insn.load(MEM.INP, { pushNext: true }), insn.finish({ popPrev: true })], [[0, 0]])]),
      "f",
      [new Uint8Array(hw.inpElemBytes)],
      { simulator: sim },
    );
    assert.equal(r.counters.inp_load_nbytes, hw.inpElemBytes);
  });
});
