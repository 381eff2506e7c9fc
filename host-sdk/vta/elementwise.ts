/**
 * Element-wise programs on VTA's vector ALU, as TVM's "Get Started with VTA"
 * tutorial builds its vector add: the operands are loaded into the
 * accumulator buffer (ACC loads of int32, or ACC_8BIT loads of int8), a chain
 * of ALU operations runs over them, and the result is stored as int8 (the
 * STORE keeps the low 8 bits).
 *
 * ```
 * for tile:                          (when the vectors do not fit the ACC buffer at once)
 *   [compute] LOAD ACC a → 0, LOAD ACC b → n, ALU ops (dst a, src b or immediate)
 *   [store]   STORE a's tile
 * ```
 *
 * All tensors are flat: `length` elements, a multiple of BATCH × BLOCK_OUT.
 */
import { FarmError, type ParamSpec } from "../../protos/index.ts";
import { ALU_OP, MEM, UopHandle, type AluOpcode, type VtaHardware } from "../../vta/index.ts";
import { divisible, divisorsDesc, fitsBuffer, oneOf, positiveInt } from "./checks.ts";
import { loop, scope, seq, type Stmt } from "./stmt.ts";
import { aluLoops, recordAlu } from "./uop-nest.ts";

/** One ALU step on `a`: with the second operand tensor `b`, or with an immediate (int16). `shl` is SHR by a negative amount; `mul` runs only on the simulator. */
export type VtaAluStep = { op: "add" | "min" | "max" | "mul"; rhs: "b" } | { op: "add" | "min" | "max" | "mul" | "shr" | "shl"; imm: number };

export interface VtaElementwiseWorkload {
  /** Elements per tensor. */
  length: number;
  /** dtype of the inputs: int32 (ACC loads, default) or int8 (ACC_8BIT loads, sign-extended). The output is int8. */
  inputDtype?: "int32" | "int8";
  /** Applied in order to `a`; the result is `a` truncated to int8. */
  ops: readonly VtaAluStep[];
}

export interface VtaElementwiseSchedule {
  /** Vectors (BATCH × BLOCK_OUT elements) per tile. */
  blockVectors: number;
}

export interface ResolvedElementwise {
  workload: Required<VtaElementwiseWorkload>;
  schedule: VtaElementwiseSchedule;
  /** Whether a second tensor `b` is an input. */
  binary: boolean;
}

const OPCODES: Record<string, AluOpcode> = { add: ALU_OP.ADD, min: ALU_OP.MIN, max: ALU_OP.MAX, mul: ALU_OP.MUL, shr: ALU_OP.SHR, shl: ALU_OP.SHR };

export function resolveElementwise(w: VtaElementwiseWorkload, schedule: Partial<VtaElementwiseSchedule> | undefined, hw: VtaHardware): ResolvedElementwise {
  if (typeof w !== "object" || w === null) throw new FarmError("INVALID_ARGUMENT", "elementwise workload must be an object");
  const length = positiveInt(w.length, "elementwise.length");
  const inputDtype = oneOf(w.inputDtype ?? "int32", ["int32", "int8"] as const, "elementwise.inputDtype");
  if (!Array.isArray(w.ops) || w.ops.length === 0) throw new FarmError("INVALID_ARGUMENT", "elementwise.ops must list at least one ALU step");
  w.ops.forEach((st, i) => {
    const at = `elementwise.ops[${i}]`;
    oneOf(st?.op, Object.keys(OPCODES), `${at}.op`);
    if ("rhs" in st) {
      if (st.rhs !== "b") throw new FarmError("INVALID_ARGUMENT", `${at}.rhs must be "b"`);
      if (st.op === ("shr" as string) || st.op === ("shl" as string)) throw new FarmError("INVALID_ARGUMENT", `${at}: shifts take an immediate amount`);
    } else if (!Number.isInteger(st.imm) || st.imm < -32768 || st.imm > 32767) {
      throw new FarmError(
        "INVALID_ARGUMENT",
        `${at}.imm must be an integer within int16 (an ALU immediate), got ${JSON.stringify((st as { imm: unknown }).imm)}`,
      );
    } else if ((st.op === "shr" || st.op === "shl") && (st.imm < 0 || st.imm > 31)) {
      throw new FarmError("INVALID_ARGUMENT", `${at}.imm: shift amounts are 0..31`);
    }
  });
  const vec = hw.batch * hw.blockOut;
  divisible("elementwise length", length, vec, "BATCH × BLOCK_OUT");
  const vectors = length / vec;
  const binary = w.ops.some((st) => "rhs" in st);
  const perVector = binary ? 2 : 1;
  let blockVectors = schedule?.blockVectors;
  if (blockVectors === undefined) {
    blockVectors = divisorsDesc(vectors).find((d) => d * perVector <= hw.accDepth);
    if (blockVectors === undefined) throw new FarmError("COMPILE_ERROR", "elementwise: no tile fits the ACC buffer");
  }
  positiveInt(blockVectors, "elementwise schedule.blockVectors");
  divisible("elementwise vectors", vectors, blockVectors, "blockVectors");
  fitsBuffer(hw, "ACC", perVector * blockVectors, `the operand tiles (${perVector} × ${blockVectors} vectors)`);
  return { workload: { length, inputDtype, ops: [...w.ops] }, schedule: { blockVectors }, binary };
}

export function elementwiseParams(r: ResolvedElementwise): ParamSpec[] {
  const { length, inputDtype } = r.workload;
  const params: ParamSpec[] = [{ name: "a", kind: "buffer", dtype: inputDtype, shape: [length] }];
  if (r.binary) params.push({ name: "b", kind: "buffer", dtype: inputDtype, shape: [length] });
  params.push({ name: "c", kind: "buffer", dtype: "int8", shape: [length] });
  return params;
}

export function lowerElementwise(r: ResolvedElementwise, hw: VtaHardware): Stmt {
  const n = r.schedule.blockVectors;
  const vectors = r.workload.length / (hw.batch * hw.blockOut);
  const memType = r.workload.inputDtype === "int8" ? MEM.ACC_8BIT : MEM.ACC;
  const outBuffer = r.binary ? 2 : 1;
  const bSram = n;
  const loops = aluLoops([{ extent: n, dst: 1, src: 1, wgt: 0 }], "elementwise");
  const sites = r.workload.ops.map((st, i) => new UopHandle(`elementwise.${i}.${st.op}`));
  const compute = scope(2, "load+alu", (ctx) => {
    const { cmd } = ctx;
    const off = (ctx.loops.tile ?? 0) * n;
    cmd.loadBuffer2D(0, off, n, 1, n, 0, 0, 0, 0, 0, memType);
    if (r.binary) cmd.loadBuffer2D(1, off, n, 1, n, 0, 0, 0, 0, bSram, memType);
    r.workload.ops.forEach((st, i) => {
      const opcode = OPCODES[st.op]!;
      const operand = "rhs" in st ? { srcOffset: bSram } : { imm: st.op === "shl" ? -st.imm : st.imm };
      cmd.pushAluOp(sites[i]!, () => recordAlu(cmd, loops, 0, opcode, operand));
    });
  });
  const store = scope(3, "store", (ctx) => {
    const off = (ctx.loops.tile ?? 0) * n;
    ctx.cmd.storeBuffer2D(0, MEM.OUT, outBuffer, off, n, 1, n);
  });
  return loop("tile", vectors / n, seq(compute, store));
}
