/**
 * @internal VTA programs for the simulator's specs, two kinds:
 *
 * * raw runs, instruction by instruction exactly as written (`insn`,
 *   `rawRun`, `binaryOf`): no runtime rules applied, so a spec can state one
 *   instruction's semantics, a corrupt stream or a token deadlock;
 * * the "Simple Matrix Multiply" tutorial (§9.1 of docs/vta-isa.md) as its call
 *   sequence against the runtime emulation (vta/runtime.ts), which alone
 *   applies the rules for dependency flags, NOPs, micro-op kernels and the end
 *   of a run.
 *
 * The compiled tutorials (blocked matmul, conv2d) and the reference
 * implementations belong to the host compiler (host-sdk/vta/); the tests that
 * need them are in tests/.
 */
import {
  DEFAULT_VTA_HARDWARE,
  MEM,
  NO_DEPS,
  OPCODE,
  STAGE,
  UOP_MODE,
  UopHandle,
  VtaCommandQueue,
  encodeInsn,
  encodeUop,
  nopInsn,
  type AluOpcode,
  type Insn,
  type MemInsn,
  type MemoryType,
  type Uop,
  type VtaBinary,
  type VtaHardware,
  type VtaRun,
} from "../../../vta/index.ts";

// ---- a program built through the runtime emulation

/**
 * §9.1 "Simple Matrix Multiply", function `matmul(A, B, C)`: A (1, 16, 1, 16)
 * int8 · B (16, 16, 16, 16) int8 → C (1, 16, 1, 16) int8 (the int32 sums
 * wrapped). Packed as in the tutorial: A[n][k], B[m][n][j][k], C[m][j].
 */
export function matrixMultiplyProgram(hw: VtaHardware = DEFAULT_VTA_HARDWARE): VtaBinary {
  const cmd = new VtaCommandQueue({ hardware: hw });
  const [A, B, C] = [0, 1, 2];
  const kernel = (site: UopHandle, reset: boolean, wgtFactor: number) =>
    cmd.pushGemmOp(site, () => {
      cmd.uopLoopBegin(16, 1, 0, wgtFactor);
      cmd.uopPush(UOP_MODE.GEMM, reset, 0, 0, 0);
      cmd.uopLoopEnd();
    });
  const reset = new UopHandle("matmul.reset");
  const gemm = new UopHandle("matmul.gemm");
  kernel(reset, true, 0);
  cmd.depPush(STAGE.COMPUTE, STAGE.LOAD);
  for (let ko = 0; ko < 16; ko++) {
    cmd.depPop(STAGE.COMPUTE, STAGE.LOAD);
    cmd.loadBuffer2D(A, ko, 1, 1, 1, 0, 0, 0, 0, 0, MEM.INP);
    cmd.loadBuffer2D(B, ko, 1, 16, 16, 0, 0, 0, 0, 0, MEM.WGT);
    cmd.depPush(STAGE.LOAD, STAGE.COMPUTE);
    cmd.depPop(STAGE.LOAD, STAGE.COMPUTE);
    kernel(gemm, false, 1);
    cmd.depPush(STAGE.COMPUTE, STAGE.LOAD);
  }
  cmd.depPush(STAGE.COMPUTE, STAGE.STORE);
  cmd.depPop(STAGE.COMPUTE, STAGE.LOAD);
  cmd.depPop(STAGE.COMPUTE, STAGE.STORE);
  cmd.storeBuffer2D(0, MEM.OUT, C, 0, 16, 1, 16);
  return { hardware: hw.name, functions: { matmul: { runs: [cmd.synchronize()] } } };
}

/** Deterministic pseudo-random int8 bytes in [-128, 128). */
export function randomInt8(n: number, seed: number): Int8Array<ArrayBuffer> {
  const out = new Int8Array(n);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    out[i] = s & 0xff;
  }
  return out;
}

// ---- raw programs, exactly as written (no runtime rules applied)

type MemFields = Partial<Omit<MemInsn, "opcode">>;

/** Shorthands for building instructions field by field; LOAD and STORE default to one element. */
export const insn = {
  load(memoryType: MemoryType, f: Omit<MemFields, "memoryType"> = {}): Insn {
    return { ...nopInsn(STAGE.LOAD), memoryType, ySize: 1, xSize: 1, xStride: 1, ...f };
  },
  store(f: MemFields = {}): Insn {
    return { ...nopInsn(STAGE.STORE), memoryType: MEM.OUT, ySize: 1, xSize: 1, xStride: 1, ...f };
  },
  gemm(f: Partial<Omit<Extract<Insn, { opcode: 2 }>, "opcode">> = {}): Insn {
    return {
      ...NO_DEPS,
      opcode: OPCODE.GEMM,
      resetReg: false,
      uopBgn: 0,
      uopEnd: 1,
      iterOut: 1,
      iterIn: 1,
      dstFactorOut: 0,
      dstFactorIn: 0,
      srcFactorOut: 0,
      srcFactorIn: 0,
      wgtFactorOut: 0,
      wgtFactorIn: 0,
      ...f,
    };
  },
  alu(aluOpcode: AluOpcode, f: Partial<Omit<Extract<Insn, { opcode: 4 }>, "opcode" | "aluOpcode">> = {}): Insn {
    return {
      ...NO_DEPS,
      opcode: OPCODE.ALU,
      aluOpcode,
      resetReg: false,
      uopBgn: 0,
      uopEnd: 1,
      iterOut: 1,
      iterIn: 1,
      dstFactorOut: 0,
      dstFactorIn: 0,
      srcFactorOut: 0,
      srcFactorIn: 0,
      useImm: false,
      imm: 0,
      ...f,
    };
  },
  finish(f: Partial<Omit<Extract<Insn, { opcode: 3 }>, "opcode">> = {}): Insn {
    return { ...NO_DEPS, opcode: OPCODE.FINISH, ...f };
  },
};

/** One run from instructions as given; `relocations` as [instruction, buffer] pairs. */
export function rawRun(insns: Insn[], relocations: [number, number][] = [], uops: Uop[] = [], hw: VtaHardware = DEFAULT_VTA_HARDWARE): VtaRun {
  const bytes = new Uint8Array(insns.length * hw.insnBytes);
  insns.forEach((x, i) => encodeInsn(x, hw, bytes, i * hw.insnBytes));
  const words = Uint32Array.from(uops.map((u) => encodeUop(u, hw)));
  return { insns: bytes, uops: new Uint8Array(words.buffer), relocations: relocations.map(([i, buffer]) => ({ insn: i, buffer })) };
}

/** A binary with one function `name` made of `runs`. */
export function binaryOf(runs: VtaRun[], name = "f", hw: VtaHardware = DEFAULT_VTA_HARDWARE): VtaBinary {
  return { hardware: hw.name, functions: { [name]: { runs } } };
}
