/**
 * Micro-op kernels from loop nests, the way TVM's VTA passes build them
 * (§8 of docs/vta-isa.md):
 *
 * * GEMM (`FoldUopLoop`): loops of extent 1 are gone (simplified away); the
 *   two outermost remaining loops become the instruction's uop loops; the
 *   others expand into uops, in loop order.
 * * ALU (`InjectALUIntrin`): adjacent loops whose strides nest
 *   (`outer = inner × extent` for both dst and src) merge; each remaining
 *   loop is a uop loop, and the kernel is a single uop. The runtime takes at
 *   most two loops.
 */
import { FarmError } from "../../protos/index.ts";
import { UOP_MODE, type AluOpcode, type Uop, type VtaCommandQueue } from "../../vta/index.ts";

/** One loop of a kernel's nest and how one step moves each index. */
export interface IndexLoop {
  extent: number;
  dst: number;
  src: number;
  wgt: number;
}

export interface FoldedGemm {
  loops: IndexLoop[];
  uops: Uop[];
}

const MAX_UOP_LOOPS = 2;

/** FoldUopLoop: the kernel a GEMM nest becomes (`base` is the index of the first uop). */
export function foldGemmNest(nest: readonly IndexLoop[], base: Uop): FoldedGemm {
  const live = nest.filter((l) => l.extent > 1);
  const loops = live.slice(0, MAX_UOP_LOOPS);
  const rest = live.slice(MAX_UOP_LOOPS);
  const uops: Uop[] = [];
  const walk = (d: number, u: Uop) => {
    if (d === rest.length) {
      uops.push(u);
      return;
    }
    const l = rest[d]!;
    for (let i = 0; i < l.extent; i++) walk(d + 1, { dst: u.dst + i * l.dst, src: u.src + i * l.src, wgt: u.wgt + i * l.wgt });
  };
  walk(0, base);
  return { loops, uops };
}

/** Whether a uop list passes the runtime's VerifyDep (no dst equal to either of the two before it); the first offender otherwise. */
export function verifyDepViolation(uops: readonly Uop[]): number | undefined {
  for (let i = 1; i < uops.length; i++) {
    if (uops[i]!.dst === uops[i - 1]!.dst || (i >= 2 && uops[i]!.dst === uops[i - 2]!.dst)) return i;
  }
  return undefined;
}

/** Records a folded GEMM kernel (inside a pushGemmOp init callback). */
export function recordGemm(cmd: VtaCommandQueue, kernel: FoldedGemm, reset: boolean): void {
  for (const l of kernel.loops) cmd.uopLoopBegin(l.extent, l.dst, reset ? 0 : l.src, reset ? 0 : l.wgt);
  for (const u of kernel.uops) cmd.uopPush(UOP_MODE.GEMM, reset, u.dst, reset ? 0 : u.src, reset ? 0 : u.wgt);
  for (let i = 0; i < kernel.loops.length; i++) cmd.uopLoopEnd();
}

/** InjectALUIntrin's loop merging; throws COMPILE_ERROR when more than two loops remain. */
export function aluLoops(nest: readonly IndexLoop[], what: string): IndexLoop[] {
  const live = nest.filter((l) => l.extent > 1);
  const merged: IndexLoop[] = [];
  for (let i = live.length - 1; i >= 0; i--) {
    const l = live[i]!;
    const inner = merged[0];
    if (inner && l.dst === inner.dst * inner.extent && l.src === inner.src * inner.extent) {
      merged[0] = { extent: inner.extent * l.extent, dst: inner.dst, src: inner.src, wgt: 0 };
    } else {
      merged.unshift({ extent: l.extent, dst: l.dst, src: l.src, wgt: 0 });
    }
  }
  if (merged.length > MAX_UOP_LOOPS) {
    throw new FarmError(
      "COMPILE_ERROR",
      `${what}: the ALU loop nest flattens to ${merged.length} loops (${merged.map((l) => l.extent).join(" × ")}), but a VTA uop kernel has at most ${MAX_UOP_LOOPS}; use a tile whose accumulator region is contiguous`,
    );
  }
  return merged;
}

export type AluOperand = { imm: number } | { srcOffset: number };

/** Records an ALU kernel: its loops, then one uop `(dst, src)`; an immediate operand works in place on dst. */
export function recordAlu(cmd: VtaCommandQueue, loops: readonly IndexLoop[], dst: number, opcode: AluOpcode, operand: AluOperand): void {
  const useImm = "imm" in operand;
  for (const l of loops) cmd.uopLoopBegin(l.extent, l.dst, l.src, 0);
  cmd.uopPush(UOP_MODE.ALU, false, dst, useImm ? dst : dst + operand.srcOffset, 0, opcode, useImm, useImm ? operand.imm : 0);
  for (let i = 0; i < loops.length; i++) cmd.uopLoopEnd();
}
