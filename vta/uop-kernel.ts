/**
 * Micro-op kernels as the TVM VTA runtime records them (§7.1 of
 * docs/vta-isa.md): up to two loops declared before the first uop, then the uops, with
 * the runtime's consistency checks (VerifyDep, one mode / reset / ALU
 * operation per kernel).
 *
 * A UopHandle plays the part of the static `void*` that TVM's code generator
 * creates once per `coproc_uop_scope` call site: it maps a kernel key (0, or
 * the one int32 of the closure + 1) to the kernel recorded for it, so a kernel
 * is recorded once and reused by every later call from that site.
 */
import { ALU_OP, type AluOpcode, type Uop } from "./isa.ts";
import { VtaRuntimeError } from "./runtime-error.ts";
import type { VtaHardware } from "./config.ts";

/** `mode` of VTAUopPush: 0 = GEMM, 1 = ALU. */
export const UOP_MODE = { GEMM: 0, ALU: 1 } as const;
export type UopMode = (typeof UOP_MODE)[keyof typeof UOP_MODE];

/** One VTAUopLoopBegin: a loop of the instruction, with the index step of each operand. */
export interface UopLoop {
  extent: number;
  dstFactor: number;
  srcFactor: number;
  wgtFactor: number;
}

/** Keys must stay below this (`CHECK_LT(key, 100)` in UopKernelMap). */
export const MAX_KERNEL_KEY = 100;
const MAX_LOOPS = 2;
const LOOP_ITER_WIDTH = 14;

export class UopKernel {
  readonly loops: UopLoop[] = [];
  readonly uops: Uop[] = [];
  mode: UopMode | undefined;
  resetOut: boolean | undefined;
  aluOpcode: AluOpcode | undefined;
  useImm = false;
  imm = 0;
  private loopDepth = 0;
  /** Where the uop cache placed the kernel in uop SRAM; resident while begin ≠ end. */
  sramBegin = 0;
  sramEnd = 0;

  constructor(
    /** The kernel's key in its handle (for messages). */
    readonly key: number,
    private readonly hw: VtaHardware,
  ) {}

  get cached(): boolean {
    return this.sramBegin !== this.sramEnd;
  }

  get size(): number {
    return this.uops.length;
  }

  loopBegin(extent: number, dstFactor: number, srcFactor: number, wgtFactor: number): void {
    if (this.uops.length !== 0)
      throw new VtaRuntimeError("UOP_RECORDING", "VTAUopLoopBegin after the kernel's first uop: declare both uop loops before any VTAUopPush");
    if (this.loops.length >= MAX_LOOPS)
      throw new VtaRuntimeError(
        "UOP_RECORDING",
        `a uop kernel has at most ${MAX_LOOPS} loops (the GEMM/ALU instruction's outer and inner loop); this one declares a third`,
      );
    const hw = this.hw;
    fits("uop loop extent", extent, LOOP_ITER_WIDTH, 1);
    fits("uop loop dst factor", dstFactor, hw.logAccDepth);
    fits("uop loop src factor", srcFactor, Math.max(hw.logInpDepth, hw.logAccDepth));
    fits("uop loop wgt factor", wgtFactor, hw.logWgtDepth);
    this.loops.push({ extent, dstFactor, srcFactor, wgtFactor });
    this.loopDepth++;
  }

  loopEnd(): void {
    if (this.loopDepth === 0) throw new VtaRuntimeError("UOP_RECORDING", "VTAUopLoopEnd without a matching VTAUopLoopBegin");
    this.loopDepth--;
  }

  push(mode: UopMode, resetOut: boolean, dst: number, src: number, wgt: number, opcode: AluOpcode, useImm: boolean, imm: number): void {
    const hw = this.hw;
    fits("uop dst index", dst, hw.logAccDepth);
    fits("uop src index", src, Math.max(hw.logInpDepth, hw.logAccDepth));
    fits("uop wgt index", wgt, hw.logWgtDepth);
    this.verifyDep(dst);
    if (this.mode === undefined) this.mode = mode;
    else if (this.mode !== mode)
      throw new VtaRuntimeError(
        "UOP_MISMATCH",
        `uop ${this.uops.length} of kernel key ${this.key} is ${modeName(mode)} but the kernel is ${modeName(this.mode)}`,
      );
    if (this.resetOut === undefined) this.resetOut = resetOut;
    else if (this.resetOut !== resetOut)
      throw new VtaRuntimeError("UOP_MISMATCH", `uop ${this.uops.length} of kernel key ${this.key} has reset_out=${+resetOut}, the kernel ${+this.resetOut}`);
    if (mode === UOP_MODE.ALU) {
      if (!Object.values(ALU_OP).includes(opcode))
        throw new VtaRuntimeError("FIELD_RANGE", `ALU opcode ${opcode} is not one of MIN=0, MAX=1, ADD=2, SHR=3, MUL=4`);
      if (!Number.isInteger(imm) || imm < -32768 || imm > 32767) throw new VtaRuntimeError("FIELD_RANGE", `ALU immediate ${imm} does not fit 16 signed bits`);
      const immVal = imm;
      if (this.aluOpcode === undefined) {
        this.aluOpcode = opcode;
        this.useImm = useImm;
        this.imm = immVal;
      } else if (this.aluOpcode !== opcode || this.useImm !== useImm || this.imm !== immVal) {
        throw new VtaRuntimeError(
          "UOP_MISMATCH",
          `uop ${this.uops.length} of ALU kernel key ${this.key} changes the opcode or immediate; one ALU kernel is one operation`,
        );
      }
    }
    this.uops.push({ dst, src, wgt });
  }

  /** The uop must not write the ACC index that either of the two uops before it writes. */
  private verifyDep(dst: number): void {
    const n = this.uops.length;
    for (let i = Math.max(0, n - 2); i < n; i++) {
      if (this.uops[i]!.dst === dst) {
        throw new VtaRuntimeError(
          "UOP_DEPENDENCE",
          `uop ${n} of kernel key ${this.key} writes ACC index ${dst}, as uop ${i} does only ${n - i} uop(s) before it (VerifyDep); ` +
            "reorder the loops so that consecutive uops write different outputs (keep a spatial axis innermost)",
        );
      }
    }
  }
}

/** The per-call-site kernel map (TVM's `UopKernelMap` behind the static handle). */
export class UopHandle {
  private readonly kernels: (UopKernel | undefined)[] = [];
  private owner: object | undefined;

  constructor(
    /** Name of the call site, for messages and dumps. */
    readonly name = "uop_scope",
  ) {}

  /** The key of a signature: 0 without one, else (int32 value + 1) as uint32; must stay < 100. */
  static key(signature: number | undefined): number {
    if (signature === undefined) return 0;
    if (!Number.isInteger(signature) || signature < -(2 ** 31) || signature >= 2 ** 31) {
      throw new VtaRuntimeError("UOP_KERNEL", `uop kernel signature ${signature} is not one int32 (the runtime takes an empty closure or exactly one int32)`);
    }
    const key = (signature + 1) >>> 0;
    if (key >= MAX_KERNEL_KEY) {
      throw new VtaRuntimeError(
        "UOP_KERNEL",
        `uop kernel key ${key} (signature ${signature} + 1) is not below ${MAX_KERNEL_KEY}: a kernel's closure value must be a small index such as the virtual thread`,
      );
    }
    return key;
  }

  /**
   * A handle serves one command queue: its kernels carry that queue's uop
   * cache state (as TVM's static handle serves the one thread-local queue).
   */
  bind(queue: object): void {
    if (this.owner === undefined) this.owner = queue;
    else if (this.owner !== queue)
      throw new VtaRuntimeError(
        "UOP_KERNEL",
        `uop call site ${this.name} is already used by another command queue; create one UopHandle per call site and queue`,
      );
  }

  get(key: number): UopKernel | undefined {
    return this.kernels[key];
  }

  set(key: number, kernel: UopKernel): void {
    this.kernels[key] = kernel;
  }
}

function modeName(mode: UopMode): string {
  return mode === UOP_MODE.GEMM ? "GEMM" : "ALU";
}

function fits(what: string, v: number, bits: number, min = 0): void {
  if (!Number.isInteger(v) || v < min || v >= 2 ** bits) {
    throw new VtaRuntimeError("FIELD_RANGE", `${what} ${v} does not fit its ${bits}-bit field${min ? ` (at least ${min})` : ""}`);
  }
}
