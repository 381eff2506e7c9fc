/**
 * Static analysis of a VTA run, without executing it:
 *
 * * `streamStats` — the simulator's counters (§5 of docs/vta-isa.md) as they
 *   follow from the instructions alone: bytes loaded per memory type, bytes
 *   stored, GEMM and ALU uop executions. A compiler can state what a program
 *   will cost before any board runs it.
 * * `checkDependencies` — runs the three modules' token protocol (§3): each
 *   module takes its instructions in order, waits for the tokens it pops,
 *   pushes after. Reports a deadlock (which instruction waits for which
 *   queue) or the tokens left in each queue at the end.
 */
import { DEFAULT_VTA_HARDWARE, type VtaHardware } from "./config.ts";
import { MEM, OPCODE, decodeInsn, type Insn } from "./isa.ts";
import { STAGE, insnModule } from "./insn-queue.ts";
import type { VtaRun } from "./program.ts";

export interface VtaStreamStats {
  inp_load_nbytes: number;
  wgt_load_nbytes: number;
  acc_load_nbytes: number;
  uop_load_nbytes: number;
  out_store_nbytes: number;
  gemm_counter: number;
  alu_counter: number;
}

export function emptyStats(): VtaStreamStats {
  return { inp_load_nbytes: 0, wgt_load_nbytes: 0, acc_load_nbytes: 0, uop_load_nbytes: 0, out_store_nbytes: 0, gemm_counter: 0, alu_counter: 0 };
}

export function decodeRun(run: VtaRun, hw: VtaHardware = DEFAULT_VTA_HARDWARE): Insn[] {
  const n = run.insns.byteLength / hw.insnBytes;
  const out: Insn[] = [];
  for (let i = 0; i < n; i++) out.push(decodeInsn(run.insns, i * hw.insnBytes, hw));
  return out;
}

/** The counters TVM's functional simulator would report for these runs. */
export function streamStats(runs: readonly VtaRun[], hw: VtaHardware = DEFAULT_VTA_HARDWARE): VtaStreamStats {
  const s = emptyStats();
  for (const run of runs) {
    for (const insn of decodeRun(run, hw)) {
      if (insn.opcode === OPCODE.LOAD && insn.xSize !== 0) {
        const n = insn.xSize * insn.ySize;
        if (insn.memoryType === MEM.INP) s.inp_load_nbytes += n * hw.inpElemBytes;
        else if (insn.memoryType === MEM.WGT) s.wgt_load_nbytes += n * hw.wgtElemBytes;
        else if (insn.memoryType === MEM.ACC || insn.memoryType === MEM.ACC_8BIT) s.acc_load_nbytes += n * hw.accElemBytes;
        else if (insn.memoryType === MEM.UOP) s.uop_load_nbytes += n * hw.uopElemBytes;
      } else if (insn.opcode === OPCODE.STORE && insn.xSize !== 0) {
        s.out_store_nbytes += insn.xSize * insn.ySize * hw.outElemBytes;
      } else if (insn.opcode === OPCODE.GEMM && !insn.resetReg) {
        s.gemm_counter += insn.iterOut * insn.iterIn * (insn.uopEnd - insn.uopBgn);
      } else if (insn.opcode === OPCODE.ALU) {
        s.alu_counter += insn.iterOut * insn.iterIn * (insn.uopEnd - insn.uopBgn);
      }
    }
  }
  return s;
}

/** Tokens in the four queues: load→compute, compute→load, store→compute, compute→store. */
export interface TokenQueues {
  l2g: number;
  g2l: number;
  s2g: number;
  g2s: number;
}

export type DependencyCheck =
  | { ok: true; left: TokenQueues }
  | {
      ok: false;
      left: TokenQueues;
      /** The instructions at the head of each module that could not proceed. */ blocked: { insn: number; module: string; waitsFor: keyof TokenQueues }[];
    };

const MODULE_NAME = { [STAGE.LOAD]: "load", [STAGE.COMPUTE]: "compute", [STAGE.STORE]: "store" } as const;

/**
 * Plays the token protocol over one run, starting from `initial` tokens
 * (TVM's simulator keeps the queues across runs). Flags that a module cannot
 * use (e.g. pop_prev on the load module) are ignored here, as hardware would.
 */
export function checkDependencies(insns: readonly Insn[], initial: Partial<TokenQueues> = {}): DependencyCheck {
  const q: TokenQueues = { l2g: 0, g2l: 0, s2g: 0, g2s: 0, ...initial };
  const queues: Record<1 | 2 | 3, number[]> = { 1: [], 2: [], 3: [] };
  insns.forEach((insn, i) => queues[insnModule(insn)].push(i));
  const head = { 1: 0, 2: 0, 3: 0 };
  const popsOf = (m: 1 | 2 | 3, insn: Insn): (keyof TokenQueues)[] => {
    const p: (keyof TokenQueues)[] = [];
    if (m === 1) {
      if (insn.popNext) p.push("g2l");
    } else if (m === 2) {
      if (insn.popPrev) p.push("l2g");
      if (insn.popNext) p.push("s2g");
    } else if (insn.popPrev) p.push("g2s");
    return p;
  };
  const pushesOf = (m: 1 | 2 | 3, insn: Insn): (keyof TokenQueues)[] => {
    const p: (keyof TokenQueues)[] = [];
    if (m === 1) {
      if (insn.pushNext) p.push("l2g");
    } else if (m === 2) {
      if (insn.pushPrev) p.push("g2l");
      if (insn.pushNext) p.push("g2s");
    } else if (insn.pushPrev) p.push("s2g");
    return p;
  };
  let progress = true;
  while (progress) {
    progress = false;
    for (const m of [1, 2, 3] as const) {
      while (head[m] < queues[m].length) {
        const insn = insns[queues[m][head[m]]!]!;
        const pops = popsOf(m, insn);
        if (pops.some((t) => q[t] === 0)) break;
        for (const t of pops) q[t]--;
        for (const t of pushesOf(m, insn)) q[t]++;
        head[m]++;
        progress = true;
      }
    }
  }
  const blocked: { insn: number; module: string; waitsFor: keyof TokenQueues }[] = [];
  for (const m of [1, 2, 3] as const) {
    if (head[m] < queues[m].length) {
      const index = queues[m][head[m]]!;
      const waitsFor = popsOf(m, insns[index]!).find((t) => q[t] === 0)!;
      blocked.push({ insn: index, module: MODULE_NAME[m], waitsFor });
    }
  }
  return blocked.length ? { ok: false, left: q, blocked } : { ok: true, left: q };
}
