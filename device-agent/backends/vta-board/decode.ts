/**
 * Decoding a VtaRun once, when its module is loaded: every instruction becomes
 * a DecodedInsn (flat numeric fields, its module, its token queues, its static
 * cycle cost), checked against the hardware as far as that can be done without
 * running it — opcode, memory type, dependency flags legal for the module,
 * SRAM ranges of loads and stores, micro-op ranges, relocations and the DRAM
 * extent each instruction touches in the buffer it names.
 *
 * Errors in the instruction stream are FarmError RUNTIME_ERROR naming the
 * function, run and instruction index (the backend raises them when the
 * function is called, as a device would); a binary whose structure is broken
 * is LOAD_ERROR.
 */
import { FarmError, type ModuleBundle } from "../../../protos/index.ts";
import { MEM, OPCODE, UOP_BUFFER, decodeInsn, decodeVtaBinary, type Insn, type VtaBinary, type VtaHardware, type VtaRun } from "../../../vta/index.ts";
import { QUEUE, QUEUE_NAMES } from "./tokens.ts";
import { aluCycles, dmaCycles, gemmCycles, type TimingModel } from "./timing.ts";

export const MODULE = { LOAD: 0, COMPUTE: 1, STORE: 2 } as const;
export const MODULE_NAMES = ["load", "compute", "store"] as const;

/** What an instruction does, resolved from opcode and memory type. */
export const KIND = {
  NOP: 0,
  LOAD_INP: 1,
  LOAD_WGT: 2,
  LOAD_ACC: 3,
  LOAD_ACC8: 4,
  LOAD_UOP: 5,
  STORE: 6,
  GEMM: 7,
  GEMM_RESET: 8,
  ALU: 9,
  FINISH: 10,
} as const;

/** `buffer` of a memory instruction without a relocation: its dram_base is an absolute element address. */
export const ABSOLUTE = -2;
/** `buffer` of an instruction that addresses no DRAM. */
export const NO_BUFFER = -3;

const ALU_NAMES = ["MIN", "MAX", "ADD", "SHR", "MUL"] as const;
const MEM_NAMES = ["UOP", "WGT", "INP", "ACC", "OUT", "ACC_8BIT"] as const;
const OPCODE_NAMES = ["LOAD", "STORE", "GEMM", "FINISH", "ALU"] as const;

/** One decoded instruction. Every field is a number so that all instances share one shape. */
export class DecodedInsn {
  kind = 0;
  module = 0;
  /** Queues popped before / pushed after execution, or -1. */
  pop0 = -1;
  pop1 = -1;
  push0 = -1;
  push1 = -1;
  /** Static cost in the timing model. */
  cycles = 0;
  // LOAD / STORE
  sramBase = 0;
  dramBase = 0;
  ySize = 0;
  xSize = 0;
  xStride = 0;
  yPad0 = 0;
  yPad1 = 0;
  xPad0 = 0;
  xPad1 = 0;
  /** Parameter index, UOP_BUFFER, ABSOLUTE or NO_BUFFER. */
  buffer = NO_BUFFER;
  /** Bytes of one DRAM element of this transfer. */
  dramElemBytes = 0;
  /** DRAM bytes [dramFirstByte, dramEndByte) touched, relative to the buffer (or absolute). */
  dramFirstByte = 0;
  dramEndByte = 0;
  // GEMM / ALU
  uopBgn = 0;
  uopEnd = 0;
  iterOut = 0;
  iterIn = 0;
  dstFactorOut = 0;
  dstFactorIn = 0;
  srcFactorOut = 0;
  srcFactorIn = 0;
  wgtFactorOut = 0;
  wgtFactorIn = 0;
  aluOpcode = 0;
  useImm = 0;
  imm = 0;

  constructor(
    readonly index: number,
    /** e.g. "LOAD INP", "GEMM reset", "ALU SHR", "NOP-COMPUTE". */
    readonly label: string,
  ) {}
}

export interface ParamInfo {
  name: string;
  kind: "buffer" | "scalar";
}

/** The most DRAM one run needs of one argument buffer, and the instruction that needs it. */
export interface BufferNeed {
  bytes: number;
  insn: number;
  label: string;
}

export interface DecodedRun {
  readonly index: number;
  readonly insns: DecodedInsn[];
  /** Instruction indices routed to each module, in program order. */
  readonly queues: readonly [Int32Array, Int32Array, Int32Array];
  /** The micro-op DMA buffer's bytes. */
  readonly uops: Uint8Array;
  /** Per parameter index: the extent this run touches (absent: none). */
  readonly needs: Map<number, BufferNeed>;
}

/**
 * The VTA program of a bundle a VTA board loads: BAD_BUNDLE when it is none or
 * contradicts the bundle's declared hardware, TARGET_MISMATCH when it was
 * compiled for other hardware than `hw` (`board` says what this board is).
 */
export function vtaBinaryOf(bundle: ModuleBundle, hw: VtaHardware, board: string): VtaBinary {
  let binary: VtaBinary;
  try {
    binary = decodeVtaBinary(bundle.binary);
  } catch (err) {
    throw new FarmError("BAD_BUNDLE", `invalid module bundle: binary is not a VTA program (${(err as Error).message})`, { cause: err });
  }
  if (binary.hardware !== hw.name) throw new FarmError("TARGET_MISMATCH", `the module was compiled for VTA hardware ${binary.hardware}, but ${board}`);
  const declared = bundle.targetDetails.hardware;
  if (declared !== undefined && declared !== binary.hardware) {
    throw new FarmError("BAD_BUNDLE", `invalid module bundle: targetDetails.hardware is ${declared} but its VTA binary was compiled for ${binary.hardware}`);
  }
  return binary;
}

/**
 * Refuses a call whose argument buffers (`nbytes[p]`, undefined: not a
 * buffer) are smaller than what the program's runs address in them.
 */
export function checkArgumentSizes(
  program: { readonly name: string; readonly params: readonly ParamInfo[]; readonly needs: ReadonlyMap<number, BufferNeed & { run: number }> },
  nbytes: readonly (number | undefined)[],
): void {
  for (const [p, need] of program.needs) {
    const param = program.params[p]!;
    const size = nbytes[p];
    const at = `argument ${p} (${param.name}) of VTA function "${program.name}"`;
    if (size === undefined) throw new FarmError("BAD_ARGUMENTS", `${at} must be a VTA DRAM buffer`);
    if (size < need.bytes) {
      throw new FarmError(
        "BAD_ARGUMENTS",
        `${at} holds ${size} bytes, but the program addresses ${need.bytes} bytes of it (run ${need.run}, instruction ${need.insn}, ${need.label}); pass an array of at least ${need.bytes} bytes`,
        { details: { param: p, needBytes: need.bytes } },
      );
    }
  }
}

/** Where errors point: `function "f", run 0`. */
export function runLabel(fnName: string, run: number): string {
  return `function "${fnName}", run ${run}`;
}

function insnError(where: string, index: number, label: string, problem: string): FarmError {
  return new FarmError("RUNTIME_ERROR", `VTA ${where}, instruction ${index} (${label}): ${problem}`, { details: { instruction: index } });
}

/** Checks a run's structure (LOAD_ERROR when broken). */
export function checkRunShape(run: unknown, where: string): asserts run is VtaRun {
  const bad = (what: string) => {
    throw new FarmError("LOAD_ERROR", `VTA binary, ${where}: ${what}`);
  };
  if (typeof run !== "object" || run === null) bad("is not a record");
  const r = run as Record<string, unknown>;
  if (!(r.insns instanceof Uint8Array)) bad("insns is not bytes");
  if ((r.insns as Uint8Array).byteLength % 16 !== 0) bad(`insns holds ${(r.insns as Uint8Array).byteLength} bytes, not a whole number of 16-byte instructions`);
  if (!(r.uops instanceof Uint8Array)) bad("uops is not bytes");
  if ((r.uops as Uint8Array).byteLength % 4 !== 0) bad(`uops holds ${(r.uops as Uint8Array).byteLength} bytes, not a whole number of 4-byte micro-ops`);
  if (!Array.isArray(r.relocations)) bad("relocations is not a list");
  for (const [k, rel] of (r.relocations as unknown[]).entries()) {
    const x = rel as Record<string, unknown> | null;
    if (typeof x !== "object" || x === null || !Number.isInteger(x.insn) || !Number.isInteger(x.buffer))
      bad(`relocations[${k}] is not { insn, buffer } integers`);
  }
}

/**
 * Decodes and checks one run. Throws RUNTIME_ERROR naming the first bad
 * instruction (or relocation).
 */
export function decodeRun(hw: VtaHardware, timing: TimingModel, run: VtaRun, runIndex: number, fnName: string, params: readonly ParamInfo[]): DecodedRun {
  const where = runLabel(fnName, runIndex);
  const count = run.insns.byteLength / 16;
  const insns: DecodedInsn[] = [];
  const routed: number[][] = [[], [], []];
  let finishes = 0;
  for (let i = 0; i < count; i++) {
    let raw: Insn;
    try {
      raw = decodeInsn(run.insns, i * 16, hw);
    } catch {
      const opcode = run.insns[i * 16]! & 7;
      throw insnError(where, i, `opcode ${opcode}`, `unknown opcode ${opcode}; VTA knows ${OPCODE_NAMES.map((n, k) => `${n} ${k}`).join(", ")}`);
    }
    const d = decodeOne(hw, timing, raw, i, where);
    insns.push(d);
    routed[d.module]!.push(i);
    if (d.kind === KIND.FINISH) finishes++;
  }
  if (finishes === 0) {
    throw new FarmError("RUNTIME_ERROR", `VTA ${where}: the run has no FINISH instruction, so it would never end (${count} instructions)`);
  }

  // Relocations: which buffer each LOAD / STORE addresses.
  const seen = new Set<number>();
  for (const [k, rel] of run.relocations.entries()) {
    if (rel.insn < 0 || rel.insn >= count) {
      throw new FarmError("RUNTIME_ERROR", `VTA ${where}: relocation ${k} names instruction ${rel.insn}, but the run has ${count} instructions`);
    }
    const d = insns[rel.insn]!;
    if (seen.has(rel.insn)) throw insnError(where, rel.insn, d.label, `has two relocations`);
    seen.add(rel.insn);
    const raw = OPCODE_NAMES[run.insns[rel.insn * 16]! & 7];
    if (raw !== "LOAD" && raw !== "STORE") throw insnError(where, rel.insn, d.label, `has a relocation, but only LOAD and STORE address DRAM`);
    if (rel.buffer !== UOP_BUFFER) {
      const p = params[rel.buffer];
      if (!p) throw insnError(where, rel.insn, d.label, `is relocated to parameter ${rel.buffer}, but the function has ${params.length} parameter(s)`);
      if (p.kind !== "buffer")
        throw insnError(where, rel.insn, d.label, `is relocated to parameter ${rel.buffer} (${p.name}), which is a scalar, not a buffer`);
    }
    if (d.buffer === ABSOLUTE) d.buffer = rel.buffer;
  }

  const needs = new Map<number, BufferNeed>();
  for (const d of insns) {
    if (d.buffer === UOP_BUFFER && d.dramEndByte > run.uops.byteLength) {
      throw insnError(
        where,
        d.index,
        d.label,
        `reads DRAM bytes [${d.dramFirstByte}, ${d.dramEndByte}) of the run's micro-op buffer, which holds only ${run.uops.byteLength} bytes`,
      );
    }
    if (d.buffer >= 0) {
      const n = needs.get(d.buffer);
      if (!n || d.dramEndByte > n.bytes) needs.set(d.buffer, { bytes: d.dramEndByte, insn: d.index, label: d.label });
    }
  }
  const queues = routed.map((q) => Int32Array.from(q)) as [Int32Array, Int32Array, Int32Array];
  return { index: runIndex, insns, queues, uops: run.uops, needs };
}

function decodeOne(hw: VtaHardware, timing: TimingModel, raw: Insn, i: number, where: string): DecodedInsn {
  let d: DecodedInsn;
  switch (raw.opcode) {
    case OPCODE.LOAD:
    case OPCODE.STORE: {
      const isLoad = raw.opcode === OPCODE.LOAD;
      const memName = MEM_NAMES[raw.memoryType] ?? `memory type ${raw.memoryType}`;
      let kind: number;
      let module: number;
      let depth: number;
      let dramElemBytes: number;
      let sramName: string;
      if (isLoad) {
        switch (raw.memoryType) {
          case MEM.INP:
            [kind, module, depth, dramElemBytes, sramName] = [KIND.LOAD_INP, MODULE.LOAD, hw.inpDepth, hw.inpElemBytes, "INP"];
            break;
          case MEM.WGT:
            [kind, module, depth, dramElemBytes, sramName] = [KIND.LOAD_WGT, MODULE.LOAD, hw.wgtDepth, hw.wgtElemBytes, "WGT"];
            break;
          case MEM.ACC:
            [kind, module, depth, dramElemBytes, sramName] = [KIND.LOAD_ACC, MODULE.COMPUTE, hw.accDepth, hw.accElemBytes, "ACC"];
            break;
          case MEM.ACC_8BIT:
            // int8 in DRAM, sign-extended into the int32 accumulators: elem_bytes = ACC_ELEM_BYTES / 4.
            [kind, module, depth, dramElemBytes, sramName] = [KIND.LOAD_ACC8, MODULE.COMPUTE, hw.accDepth, hw.batch * hw.blockOut, "ACC"];
            break;
          case MEM.UOP:
            [kind, module, depth, dramElemBytes, sramName] = [KIND.LOAD_UOP, MODULE.COMPUTE, hw.uopDepth, hw.uopElemBytes, "UOP"];
            break;
          default:
            throw insnError(where, i, `LOAD ${memName}`, `cannot load into ${memName}; loads go to UOP 0, WGT 1, INP 2, ACC 3 or ACC_8BIT 5`);
        }
      } else {
        [kind, module, depth, dramElemBytes, sramName] = [KIND.STORE, MODULE.STORE, hw.accDepth, hw.outElemBytes, "ACC"];
      }
      const nop = raw.xSize === 0;
      const label = nop ? `NOP-${["MEMORY", "COMPUTE", "STORE"][module]}` : isLoad ? `LOAD ${memName}` : "STORE";
      d = new DecodedInsn(i, label);
      d.module = module;
      d.sramBase = raw.sramBase;
      d.dramBase = raw.dramBase;
      d.ySize = raw.ySize;
      d.xSize = raw.xSize;
      d.xStride = raw.xStride;
      d.yPad0 = raw.yPad0;
      d.yPad1 = raw.yPad1;
      d.xPad0 = raw.xPad0;
      d.xPad1 = raw.xPad1;
      if (nop) {
        d.kind = KIND.NOP;
        d.cycles = timing.nopCycles;
        break;
      }
      d.kind = kind;
      d.dramElemBytes = dramElemBytes;
      if (!isLoad) {
        if (raw.memoryType !== MEM.OUT) throw insnError(where, i, label, `stores ${memName}; a STORE must have memory type OUT (4)`);
        if (raw.yPad0 || raw.yPad1 || raw.xPad0 || raw.xPad1)
          throw insnError(where, i, label, `has padding (y ${raw.yPad0},${raw.yPad1} x ${raw.xPad0},${raw.xPad1}); a STORE cannot pad`);
      }
      const width = raw.xPad0 + raw.xSize + raw.xPad1;
      const rows = isLoad ? raw.yPad0 + raw.ySize + raw.yPad1 : raw.ySize;
      const sramEnd = raw.sramBase + width * rows;
      if (sramEnd > depth) {
        throw insnError(
          where,
          i,
          label,
          `${isLoad ? "writes" : "reads"} ${sramName} SRAM elements [${raw.sramBase}, ${sramEnd}), but the ${sramName} buffer holds ${depth} elements`,
        );
      }
      if (raw.ySize > 0) {
        d.buffer = ABSOLUTE;
        d.dramFirstByte = raw.dramBase * dramElemBytes;
        d.dramEndByte = (raw.dramBase + (raw.ySize - 1) * raw.xStride + raw.xSize) * dramElemBytes;
      }
      const moved = raw.xSize * raw.ySize;
      d.cycles = dmaCycles(timing, moved * dramElemBytes, width * rows - moved);
      break;
    }
    case OPCODE.GEMM:
    case OPCODE.ALU: {
      const isGemm = raw.opcode === OPCODE.GEMM;
      let label: string;
      if (isGemm) {
        label = raw.resetReg ? "GEMM reset" : "GEMM";
      } else {
        const op = ALU_NAMES[raw.aluOpcode];
        if (!op) throw insnError(where, i, "ALU", `unknown ALU opcode ${raw.aluOpcode}; VTA knows ${ALU_NAMES.map((n, k) => `${n} ${k}`).join(", ")}`);
        label = `ALU ${op}${raw.useImm ? ` imm ${raw.imm}` : ""}`;
      }
      d = new DecodedInsn(i, label);
      d.module = MODULE.COMPUTE;
      d.kind = isGemm ? (raw.resetReg ? KIND.GEMM_RESET : KIND.GEMM) : KIND.ALU;
      d.uopBgn = raw.uopBgn;
      d.uopEnd = raw.uopEnd;
      d.iterOut = raw.iterOut;
      d.iterIn = raw.iterIn;
      d.dstFactorOut = raw.dstFactorOut;
      d.dstFactorIn = raw.dstFactorIn;
      d.srcFactorOut = raw.srcFactorOut;
      d.srcFactorIn = raw.srcFactorIn;
      if (raw.opcode === OPCODE.GEMM) {
        d.wgtFactorOut = raw.wgtFactorOut;
        d.wgtFactorIn = raw.wgtFactorIn;
      } else {
        d.aluOpcode = raw.aluOpcode;
        d.useImm = raw.useImm ? 1 : 0;
        d.imm = raw.imm;
      }
      if (raw.uopEnd > hw.uopDepth) throw insnError(where, i, label, `uses micro-ops [${raw.uopBgn}, ${raw.uopEnd}), but the UOP buffer holds ${hw.uopDepth}`);
      if (raw.uopBgn > raw.uopEnd) throw insnError(where, i, label, `has uop_bgn ${raw.uopBgn} after uop_end ${raw.uopEnd}`);
      const execs = raw.iterOut * raw.iterIn * (raw.uopEnd - raw.uopBgn);
      d.cycles = isGemm ? gemmCycles(timing, execs) : aluCycles(timing, execs, raw.useImm);
      break;
    }
    case OPCODE.FINISH:
      d = new DecodedInsn(i, "FINISH");
      d.kind = KIND.FINISH;
      d.module = MODULE.COMPUTE;
      d.cycles = timing.nopCycles;
      break;
  }
  setQueues(d, raw, where);
  return d;
}

/**
 * Dependency flags → token queues (§3):
 *
 * | module | pop_prev | pop_next | push_prev | push_next |
 * |---|---|---|---|---|
 * | load | – | g2l | – | l2g |
 * | compute | l2g | s2g | g2l | g2s |
 * | store | g2s | – | s2g | – |
 */
function setQueues(d: DecodedInsn, raw: Insn, where: string): void {
  const illegal = (flag: string) =>
    insnError(
      where,
      d.index,
      d.label,
      `sets ${flag}, but the ${MODULE_NAMES[d.module]} module has no ${flag.includes("prev") ? "previous" : "next"} module to exchange tokens with`,
    );
  switch (d.module) {
    case MODULE.LOAD:
      if (raw.popPrev) throw illegal("pop_prev");
      if (raw.pushPrev) throw illegal("push_prev");
      if (raw.popNext) d.pop0 = QUEUE.G2L;
      if (raw.pushNext) d.push0 = QUEUE.L2G;
      break;
    case MODULE.COMPUTE:
      if (raw.popPrev) d.pop0 = QUEUE.L2G;
      if (raw.popNext) d.pop1 = QUEUE.S2G;
      if (raw.pushPrev) d.push0 = QUEUE.G2L;
      if (raw.pushNext) d.push1 = QUEUE.G2S;
      break;
    case MODULE.STORE:
      if (raw.popNext) throw illegal("pop_next");
      if (raw.pushNext) throw illegal("push_next");
      if (raw.popPrev) d.pop0 = QUEUE.G2S;
      if (raw.pushPrev) d.push0 = QUEUE.S2G;
      break;
  }
}

/** e.g. "pop_next (g2l)" for messages. */
export function popFlagName(d: DecodedInsn, queue: number): string {
  const flag = d.module === MODULE.COMPUTE ? (queue === QUEUE.L2G ? "pop_prev" : "pop_next") : d.module === MODULE.LOAD ? "pop_next" : "pop_prev";
  return `${flag} (${QUEUE_NAMES[queue]})`;
}
