/**
 * The instruction queue of the TVM VTA runtime (`InsnQueue`, §7.3 of
 * docs/vta-isa.md): instructions in program order, the pending dependency pops of
 * each pipeline stage, and the rules that turn VTADepPush / VTADepPop into
 * flags on neighbouring instructions or into NOPs.
 *
 * Stages (queue ids): 1 = load, 2 = compute, 3 = store.
 */
import { MEM, NO_DEPS, OPCODE, type Insn, type MemInsn, type MemoryType } from "./isa.ts";
import { VtaRuntimeError } from "./runtime-error.ts";

export const STAGE = { NONE: 0, LOAD: 1, COMPUTE: 2, STORE: 3 } as const;
export type Stage = (typeof STAGE)[keyof typeof STAGE];
export type QueueId = typeof STAGE.LOAD | typeof STAGE.COMPUTE | typeof STAGE.STORE;

/** The stage that executes a LOAD of this memory type: INP and WGT load; UOP, ACC and ACC_8BIT compute. */
export function memStage(memoryType: MemoryType): Stage {
  return memoryType === MEM.UOP || memoryType === MEM.ACC || memoryType === MEM.ACC_8BIT ? STAGE.COMPUTE : STAGE.LOAD;
}

/**
 * The stage of an instruction for merging a push into it: GEMM, ALU → compute;
 * STORE (NOP or not) → store; a LOAD by its memory type, except that a NOP LOAD
 * (`x_size == 0`) has no stage.
 */
export function insnStage(insn: Insn): Stage {
  switch (insn.opcode) {
    case OPCODE.GEMM:
    case OPCODE.ALU:
    case OPCODE.FINISH:
      return STAGE.COMPUTE;
    case OPCODE.STORE:
      return STAGE.STORE;
    case OPCODE.LOAD:
      return insn.xSize === 0 ? STAGE.NONE : memStage(insn.memoryType);
  }
}

/** The module an instruction runs on (NOPs included): what the fetch unit routes it to. */
export function insnModule(insn: Insn): QueueId {
  if (insn.opcode === OPCODE.STORE) return STAGE.STORE;
  if (insn.opcode === OPCODE.LOAD) return memStage(insn.memoryType) === STAGE.LOAD ? STAGE.LOAD : STAGE.COMPUTE;
  return STAGE.COMPUTE;
}

/** A NOP of a stage: STORE for the store stage, else LOAD of INP (load stage) or UOP (compute stage); all sizes 0. */
export function nopInsn(stage: QueueId): MemInsn {
  return {
    opcode: stage === STAGE.STORE ? OPCODE.STORE : OPCODE.LOAD,
    ...NO_DEPS,
    memoryType: stage === STAGE.LOAD ? MEM.INP : MEM.UOP,
    sramBase: 0,
    dramBase: 0,
    ySize: 0,
    xSize: 0,
    xStride: 0,
    yPad0: 0,
    yPad1: 0,
    xPad0: 0,
    xPad1: 0,
  };
}

/** Distributive Omit, so each instruction kind keeps its own fields. */
export type InsnBody = Insn extends infer I ? (I extends Insn ? Omit<I, "popPrev" | "popNext" | "pushPrev" | "pushNext"> : never) : never;

export class InsnQueue {
  readonly insns: Insn[] = [];
  /** Per instruction: the parameter buffer a LOAD/STORE addresses (see program.ts), or undefined. */
  readonly buffers: (number | undefined)[] = [];
  private readonly pendingPopPrev = [false, false, false, false];
  private readonly pendingPopNext = [false, false, false, false];

  get count(): number {
    return this.insns.length;
  }

  /** Appends an instruction of `stage`, which takes that stage's pending pops. */
  create<T extends InsnBody>(stage: QueueId, body: T, buffer?: number): T & Insn {
    const insn = {
      ...body,
      popPrev: this.pendingPopPrev[stage]!,
      popNext: this.pendingPopNext[stage]!,
      pushPrev: false,
      pushNext: false,
    } as unknown as T & Insn;
    this.pendingPopPrev[stage] = false;
    this.pendingPopNext[stage] = false;
    this.insns.push(insn);
    this.buffers.push(buffer);
    return insn;
  }

  /** VTADepPop(from, to): a pop that stage `to` executes, pending until its next instruction. */
  depPop(from: QueueId, to: QueueId): void {
    checkQueues(from, to);
    const pending = from < to ? this.pendingPopPrev : this.pendingPopNext;
    if (pending[to]) this.commitPendingPop(to);
    pending[to] = true;
  }

  /** VTADepPush(from, to): merged into the last instruction when it is of stage `from` with that flag free, else a NOP. */
  depPush(from: QueueId, to: QueueId): void {
    checkQueues(from, to);
    this.commitPendingPop(from);
    const last = this.insns[this.insns.length - 1];
    if (last && insnStage(last) === from) {
      if (from < to && !last.pushNext) {
        last.pushNext = true;
        return;
      }
      if (from > to && !last.pushPrev) {
        last.pushPrev = true;
        return;
      }
    }
    this.pushNoop(from, { pushPrev: from > to, pushNext: from < to, popPrev: false, popNext: false });
  }

  /** Emits a NOP of `stage` carrying its pending pops, if it has any. */
  commitPendingPop(stage: QueueId): void {
    const prev = this.pendingPopPrev[stage]!;
    const next = this.pendingPopNext[stage]!;
    if (prev || next) {
      this.pushNoop(stage, { pushPrev: false, pushNext: false, popPrev: prev, popNext: next });
      this.pendingPopPrev[stage] = false;
      this.pendingPopNext[stage] = false;
    }
  }

  /** Pending pops, by stage: what the next instruction of each stage would take. */
  pendingPops(): { stage: QueueId; popPrev: boolean; popNext: boolean }[] {
    const out: { stage: QueueId; popPrev: boolean; popNext: boolean }[] = [];
    for (const stage of [STAGE.LOAD, STAGE.COMPUTE, STAGE.STORE] as const) {
      if (this.pendingPopPrev[stage] || this.pendingPopNext[stage]) {
        out.push({ stage, popPrev: this.pendingPopPrev[stage]!, popNext: this.pendingPopNext[stage]! });
      }
    }
    return out;
  }

  /** FORCE_SERIAL only: forget a pending pop_next of `stage` (TVM's RewriteForceSerial does this). */
  dropPendingPopNext(stage: QueueId): void {
    this.pendingPopNext[stage] = false;
  }

  hasPendingPop(): boolean {
    return this.pendingPops().length > 0;
  }

  /** Empties the instruction list (pending pops survive, as in TVM: they belong to the next run). */
  reset(): void {
    this.insns.length = 0;
    this.buffers.length = 0;
  }

  private pushNoop(stage: QueueId, flags: { pushPrev: boolean; pushNext: boolean; popPrev: boolean; popNext: boolean }): void {
    this.insns.push({ ...nopInsn(stage), ...flags });
    this.buffers.push(undefined);
  }
}

function checkQueues(from: number, to: number): void {
  for (const q of [from, to]) {
    if (q !== STAGE.LOAD && q !== STAGE.COMPUTE && q !== STAGE.STORE) {
      throw new VtaRuntimeError("DEPENDENCE", `dependency queue ${q} is not 1 (load), 2 (compute) or 3 (store)`);
    }
  }
  if (from === to) throw new VtaRuntimeError("DEPENDENCE", `a dependency from queue ${from} to itself is meaningless`);
  if ((from === STAGE.LOAD && to === STAGE.STORE) || (from === STAGE.STORE && to === STAGE.LOAD)) {
    throw new VtaRuntimeError(
      "DEPENDENCE",
      `there is no token queue between ${from === 1 ? "load" : "store"} and ${to === 1 ? "load" : "store"}: dependencies only link load↔compute and compute↔store`,
    );
  }
}
