/**
 * @internal Hand-built VTA programs for the simulator's tests and benchmarks:
 * a small ProgramBuilder that follows the TVM runtime's rules for dependency
 * flags, NOPs, micro-op kernels and the end of a run (§2.6 of the VTA spec),
 * and the tutorial workloads built with it (§2.8), with plain reference
 * implementations. The real compiler lives in host-sdk; these exist so the
 * simulator can be tested on its own.
 */
import {
  ALU_OP, DEFAULT_VTA_HARDWARE, MEM, NO_DEPS, OPCODE, UOP_BUFFER, encodeInsn, encodeUop,
  type AluOpcode, type Insn, type MemoryType, type Relocation, type Uop, type VtaBinary, type VtaHardware, type VtaRun,
} from "../../../vta/index.ts";

/** Runtime stage (queue) ids: 1 load, 2 compute, 3 store. */
export type Stage = 1 | 2 | 3;

/** A uop loop: extent and the factors it adds per iteration. */
export interface UopLoop {
  extent: number;
  dst: number;
  src: number;
  wgt?: number;
}

interface Kernel {
  uops: Uop[];
  start: number;
  /** Position in the run's micro-op buffer, in uops. */
  dramOffset: number;
}

/** Builds one run, applying dependency pops/pushes the way VTA's InsnQueue does. */
export class ProgramBuilder {
  readonly insns: Insn[] = [];
  readonly relocations: Relocation[] = [];
  private readonly uopWords: number[] = [];
  private readonly kernels = new Map<string, Kernel>();
  private uopEnd = 0;
  private readonly pending: Record<Stage, { prev: boolean; next: boolean }> = { 1: { prev: false, next: false }, 2: { prev: false, next: false }, 3: { prev: false, next: false } };
  /** Stage of each instruction for push merging (NOP LOADs have none). */
  private readonly stages: (Stage | 0)[] = [];

  constructor(readonly hw: VtaHardware = DEFAULT_VTA_HARDWARE) {}

  /** Appends an instruction of `stage`, taking that stage's pending pops. */
  private emit(insn: Insn, stage: Stage, mergeStage: Stage | 0 = stage): number {
    const p = this.pending[stage];
    insn.popPrev ||= p.prev;
    insn.popNext ||= p.next;
    p.prev = p.next = false;
    this.insns.push(insn);
    this.stages.push(mergeStage);
    return this.insns.length - 1;
  }

  private nop(stage: Stage): Insn {
    const base = { ...NO_DEPS, sramBase: 0, dramBase: 0, ySize: 0, xSize: 0, xStride: 0, yPad0: 0, yPad1: 0, xPad0: 0, xPad1: 0 };
    if (stage === 3) return { ...base, opcode: OPCODE.STORE, memoryType: MEM.UOP };
    return { ...base, opcode: OPCODE.LOAD, memoryType: stage === 1 ? MEM.INP : MEM.UOP };
  }

  private commitPops(stage: Stage): void {
    const p = this.pending[stage];
    if (p.prev || p.next) this.emit(this.nop(stage), stage, stage === 3 ? 3 : 0);
  }

  depPop(from: Stage, to: Stage): void {
    const flag = from < to ? "prev" : "next";
    if (this.pending[to][flag]) this.commitPops(to);
    this.pending[to][flag] = true;
  }

  depPush(from: Stage, to: Stage): void {
    this.commitPops(from);
    const flag = from < to ? "pushNext" : "pushPrev";
    const last = this.insns.length - 1;
    if (last >= 0 && this.stages[last] === from && !this.insns[last]![flag]) {
      this.insns[last]![flag] = true;
      return;
    }
    const nop = this.nop(from);
    nop[flag] = true;
    this.emit(nop, from, from === 3 ? 3 : 0);
  }

  /** VTALoadBuffer2D: `buffer` is a parameter index. */
  load(
    memoryType: MemoryType, sramBase: number, buffer: number, dramBase: number,
    xSize: number, ySize: number, xStride: number, pad: { y0?: number; y1?: number; x0?: number; x1?: number } = {},
  ): number {
    const stage: Stage = memoryType === MEM.INP || memoryType === MEM.WGT ? 1 : 2;
    const i = this.emit(
      {
        ...NO_DEPS, opcode: OPCODE.LOAD, memoryType, sramBase, dramBase, xSize, ySize, xStride,
        yPad0: pad.y0 ?? 0, yPad1: pad.y1 ?? 0, xPad0: pad.x0 ?? 0, xPad1: pad.x1 ?? 0,
      },
      stage,
      xSize === 0 ? 0 : stage,
    );
    this.relocations.push({ insn: i, buffer });
    return i;
  }

  /** VTAStoreBuffer2D from ACC to an OUT buffer (parameter index). */
  store(sramBase: number, buffer: number, dramBase: number, xSize: number, ySize: number, xStride: number): number {
    const i = this.emit(
      { ...NO_DEPS, opcode: OPCODE.STORE, memoryType: MEM.OUT, sramBase, dramBase, xSize, ySize, xStride, yPad0: 0, yPad1: 0, xPad0: 0, xPad1: 0 },
      3,
    );
    this.relocations.push({ insn: i, buffer });
    return i;
  }

  /** The kernel's SRAM range, emitting a LOAD UOP the first time `key` is used in this run. */
  private kernel(key: string, uops: Uop[]): Kernel {
    let k = this.kernels.get(key);
    if (k) return k;
    if (this.uopEnd + uops.length > this.hw.uopDepth) throw new RangeError("test program: micro-op kernels overflow the UOP buffer");
    k = { uops, start: this.uopEnd, dramOffset: this.uopWords.length };
    this.kernels.set(key, k);
    this.uopEnd += uops.length;
    for (const u of uops) this.uopWords.push(encodeUop(u, this.hw));
    const i = this.emit(
      { ...NO_DEPS, opcode: OPCODE.LOAD, memoryType: MEM.UOP, sramBase: k.start, dramBase: k.dramOffset, xSize: uops.length, ySize: 1, xStride: uops.length, yPad0: 0, yPad1: 0, xPad0: 0, xPad1: 0 },
      2,
    );
    this.relocations.push({ insn: i, buffer: UOP_BUFFER });
    return k;
  }

  /** VTAPushGEMMOp: loops[0] is the outer loop, loops[1] the inner. */
  gemm(key: string, uops: Uop[], loops: UopLoop[], reset = false): number {
    const k = this.kernel(key, uops);
    const [o, n] = [loops[0] ?? { extent: 1, dst: 0, src: 0, wgt: 0 }, loops[1] ?? { extent: 1, dst: 0, src: 0, wgt: 0 }];
    return this.emit(
      {
        ...NO_DEPS, opcode: OPCODE.GEMM, resetReg: reset, uopBgn: k.start, uopEnd: k.start + uops.length,
        iterOut: o.extent, iterIn: n.extent, dstFactorOut: o.dst, dstFactorIn: n.dst, srcFactorOut: o.src, srcFactorIn: n.src,
        wgtFactorOut: o.wgt ?? 0, wgtFactorIn: n.wgt ?? 0,
      },
      2,
    );
  }

  /** VTAPushALUOp: one loop is the inner loop (iter_out 1); two are outer, inner. */
  alu(key: string, uops: Uop[], loops: UopLoop[], aluOpcode: AluOpcode, imm?: number): number {
    const k = this.kernel(key, uops);
    const none = { extent: 1, dst: 0, src: 0 };
    const [o, n] = loops.length === 1 ? [none, loops[0]!] : [loops[0] ?? none, loops[1] ?? none];
    return this.emit(
      {
        ...NO_DEPS, opcode: OPCODE.ALU, resetReg: false, uopBgn: k.start, uopEnd: k.start + uops.length,
        iterOut: o.extent, iterIn: n.extent, dstFactorOut: o.dst, dstFactorIn: n.dst, srcFactorOut: o.src, srcFactorIn: n.src,
        aluOpcode, useImm: imm !== undefined, imm: imm ?? 0,
      },
      2,
    );
  }

  /** VTASynchronize's epilogue and FINISH; returns the run. */
  synchronize(): VtaRun {
    this.depPush(3, 2);
    this.depPush(1, 2);
    this.depPop(3, 2);
    this.depPop(1, 2);
    this.commitPops(2);
    this.emit({ ...NO_DEPS, opcode: OPCODE.FINISH }, 2);
    return this.build();
  }

  /** The run as it stands (no epilogue). */
  build(): VtaRun {
    const insns = new Uint8Array(this.insns.length * 16);
    this.insns.forEach((insn, i) => encodeInsn(insn, this.hw, insns, i * 16));
    return { insns, uops: new Uint8Array(Uint32Array.from(this.uopWords).buffer), relocations: [...this.relocations] };
  }
}

// ---- the tutorials

/** §2.8.1 "Simple Matrix Multiply": A (1×256) int8 · B (256×256) int8 → C int8 (wrapped int32). Params: A, B, C. */
export function matrixMultiplyProgram(hw: VtaHardware = DEFAULT_VTA_HARDWARE): VtaBinary {
  const b = new ProgramBuilder(hw);
  const n = 16;
  b.gemm("reset", [{ dst: 0, src: 0, wgt: 0 }], [{ extent: 16, dst: 1, src: 0, wgt: 0 }], true);
  b.depPush(2, 1);
  for (let ko = 0; ko < n; ko++) {
    b.depPop(2, 1);
    b.load(MEM.INP, 0, 0, ko, 1, 1, 1);
    b.load(MEM.WGT, 0, 1, ko, 1, 16, 16);
    b.depPush(1, 2);
    b.depPop(1, 2);
    b.gemm("gemm", [{ dst: 0, src: 0, wgt: 0 }], [{ extent: 16, dst: 1, src: 0, wgt: 1 }]);
    b.depPush(2, 1);
  }
  b.depPush(2, 3);
  b.depPop(2, 1);
  b.depPop(2, 3);
  b.store(0, 2, 0, 16, 1, 16);
  return { hardware: hw.name, functions: { matmul: { runs: [b.synchronize()] } } };
}

export interface Conv2dTutorialOptions {
  /** Virtual threads: 2 as in the tutorial, or 1 (the same tiles run one after the other). */
  threads?: 1 | 2;
}

/**
 * §2.8.3 "2D Convolution Optimization" (ResNet-18 layer 9: 1×256×14×14, 256
 * filters 3×3, pad 1, stride 1, >> 8, clip [0, 127]) with the tutorial's
 * schedule. Params: data (1,16,14,14,1,16) int8, kernel (16,16,3,3,16,16)
 * int8, res (1,16,14,14,1,16) int8. With 2 threads it is the golden stream.
 */
export function conv2dTutorialProgram(opts: Conv2dTutorialOptions = {}, hw: VtaHardware = DEFAULT_VTA_HARDWARE): VtaBinary {
  const T = opts.threads ?? 2;
  const b = new ProgramBuilder(hw);
  const [DATA, KERNEL, RES] = [0, 1, 2];
  // One tile: 8 output-channel blocks × 7 rows × 14 columns; ACC 784 per tile, INP 9 × 16, WGT 8 × 9.
  const resetUops = (t: number) => Array.from({ length: 14 }, (_, j) => ({ dst: 784 * t + j, src: 0, wgt: 0 }));
  const convUops = (t: number) => {
    const u: Uop[] = [];
    for (let dy = 0; dy < 3; dy++) for (let dx = 0; dx < 3; dx++) for (let j = 0; j < 14; j++) u.push({ dst: 784 * t + j, src: 144 * t + 16 * dy + j + dx, wgt: 72 * t + 3 * dy + dx });
    return u;
  };
  // tile(t, oc0, h): thread slot t in SRAM, first output-channel block oc0 (0 or 8), row half h.
  const tiles: { slot: number; oc: number; h: number }[][] = [];
  if (T === 2) for (let h = 0; h < 2; h++) tiles.push([0, 1].map((t) => ({ slot: t, oc: 8 * t, h })));
  else for (let ot = 0; ot < 2; ot++) for (let h = 0; h < 2; h++) tiles.push([{ slot: 0, oc: 8 * ot, h }]);

  for (let t = 0; t < T; t++) b.depPush(3, 2);
  for (const group of tiles) {
    for (const { slot } of group) {
      b.depPop(3, 2);
      b.gemm(`reset${slot}`, resetUops(slot), [{ extent: 8, dst: 98, src: 0, wgt: 0 }, { extent: 7, dst: 14, src: 0, wgt: 0 }], true);
      b.depPush(2, 1);
    }
    for (let ic = 0; ic < 16; ic++) {
      for (const { slot, oc, h } of group) {
        const ypad0 = Math.max(1 - 7 * h, 0);
        const ypad1 = Math.max(7 * h - 6, 0);
        const rows = 9 - ypad0 - ypad1;
        const off = 196 * ic + 98 * h + 14 * ypad0 - 14;
        b.depPop(2, 1);
        b.load(MEM.INP, 144 * slot, DATA, off, 14, rows, 14, { y0: ypad0, y1: ypad1, x0: 1, x1: 1 });
        b.load(MEM.WGT, 72 * slot, KERNEL, 9 * ic + 144 * oc, 9, 8, 144);
        b.depPush(1, 2);
      }
      for (const { slot } of group) {
        b.depPop(1, 2);
        b.gemm(`conv${slot}`, convUops(slot), [{ extent: 8, dst: 98, src: 0, wgt: 9 }, { extent: 7, dst: 14, src: 16, wgt: 0 }]);
        b.depPush(2, 1);
      }
    }
    for (let k = 0; k < group.length; k++) b.depPop(2, 1);
    for (const { slot } of group) {
      const u = [{ dst: 784 * slot, src: 784 * slot, wgt: 0 }];
      const loop = [{ extent: 784, dst: 1, src: 1 }];
      b.alu(`shr${slot}`, u, loop, ALU_OP.SHR, 8);
      b.alu(`max${slot}`, u, loop, ALU_OP.MAX, 0);
      b.alu(`min${slot}`, u, loop, ALU_OP.MIN, 127);
      b.depPush(2, 3);
    }
    for (const { slot, oc: oc0, h } of group) {
      b.depPop(2, 3);
      for (let oc = 0; oc < 8; oc++) {
        for (let r = 0; r < 7; r++) {
          for (let c = 0; c < 14; c++) b.store(784 * slot + 98 * oc + 14 * r + c, RES, 196 * (oc0 + oc) + 98 * h + 14 * r + c, 1, 1, 1);
        }
      }
      b.depPush(3, 2);
    }
  }
  for (let t = 0; t < T; t++) b.depPop(3, 2);
  return { hardware: hw.name, functions: { conv2d: { runs: [b.synchronize()] } } };
}

/** Conv2d tutorial sizes. */
export const CONV2D = { channels: 256, height: 14, width: 14, kernel: 3, macs: 256 * 256 * 14 * 14 * 9 } as const;

/**
 * Reference for conv2dTutorialProgram on packed data: int32 accumulation,
 * >> 8, clip to [0, 127], int8. `data` (16,14,14,16), `kernel` (16,16,3,3,16,16), result packed like data.
 */
export function conv2dReference(data: Int8Array, kernel: Int8Array): Int8Array {
  const C = 16;
  const H = 14;
  const W = 14;
  const out = new Int8Array(C * H * W * 16);
  const acc = new Int32Array(16);
  for (let ob = 0; ob < C; ob++) {
    for (let y = 0; y < H; y++) {
      for (let x = 0; x < W; x++) {
        acc.fill(0);
        for (let ib = 0; ib < C; ib++) {
          for (let dy = 0; dy < 3; dy++) {
            const yy = y + dy - 1;
            if (yy < 0 || yy >= H) continue;
            for (let dx = 0; dx < 3; dx++) {
              const xx = x + dx - 1;
              if (xx < 0 || xx >= W) continue;
              const d = ((ib * H + yy) * W + xx) * 16;
              const k = (((ob * C + ib) * 3 + dy) * 3 + dx) * 256;
              for (let j = 0; j < 16; j++) {
                let s = 0;
                for (let i = 0; i < 16; i++) s += data[d + i]! * kernel[k + j * 16 + i]!;
                acc[j] = (acc[j]! + s) | 0;
              }
            }
          }
        }
        const o = ((ob * H + y) * W + x) * 16;
        for (let j = 0; j < 16; j++) out[o + j] = Math.min(127, Math.max(0, acc[j]! >> 8));
      }
    }
  }
  return out;
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

/** Shorthands for building instructions field by field. */
export const insn = {
  load(memoryType: MemoryType, f: Partial<Omit<Extract<Insn, { opcode: 0 | 1 }>, "opcode" | "memoryType">> = {}): Insn {
    return { ...NO_DEPS, opcode: OPCODE.LOAD, memoryType, sramBase: 0, dramBase: 0, ySize: 1, xSize: 1, xStride: 1, yPad0: 0, yPad1: 0, xPad0: 0, xPad1: 0, ...f };
  },
  store(f: Partial<Omit<Extract<Insn, { opcode: 0 | 1 }>, "opcode">> = {}): Insn {
    return { ...NO_DEPS, opcode: OPCODE.STORE, memoryType: MEM.OUT, sramBase: 0, dramBase: 0, ySize: 1, xSize: 1, xStride: 1, yPad0: 0, yPad1: 0, xPad0: 0, xPad1: 0, ...f };
  },
  gemm(f: Partial<Omit<Extract<Insn, { opcode: 2 }>, "opcode">> = {}): Insn {
    return {
      ...NO_DEPS, opcode: OPCODE.GEMM, resetReg: false, uopBgn: 0, uopEnd: 1, iterOut: 1, iterIn: 1,
      dstFactorOut: 0, dstFactorIn: 0, srcFactorOut: 0, srcFactorIn: 0, wgtFactorOut: 0, wgtFactorIn: 0, ...f,
    };
  },
  alu(aluOpcode: AluOpcode, f: Partial<Omit<Extract<Insn, { opcode: 4 }>, "opcode" | "aluOpcode">> = {}): Insn {
    return {
      ...NO_DEPS, opcode: OPCODE.ALU, aluOpcode, resetReg: false, uopBgn: 0, uopEnd: 1, iterOut: 1, iterIn: 1,
      dstFactorOut: 0, dstFactorIn: 0, srcFactorOut: 0, srcFactorIn: 0, useImm: false, imm: 0, ...f,
    };
  },
  finish(f: Partial<Omit<Extract<Insn, { opcode: 3 }>, "opcode">> = {}): Insn {
    return { ...NO_DEPS, opcode: OPCODE.FINISH, ...f };
  },
};

/** One run from instructions as given; `relocations` as [instruction, buffer] pairs. */
export function rawRun(insns: Insn[], relocations: [number, number][] = [], uops: Uop[] = [], hw: VtaHardware = DEFAULT_VTA_HARDWARE): VtaRun {
  const bytes = new Uint8Array(insns.length * 16);
  insns.forEach((x, i) => encodeInsn(x, hw, bytes, i * 16));
  const words = Uint32Array.from(uops.map((u) => encodeUop(u, hw)));
  return { insns: bytes, uops: new Uint8Array(words.buffer), relocations: relocations.map(([i, buffer]) => ({ insn: i, buffer })) };
}

/** A binary with one function `name` made of `runs`. */
export function binaryOf(runs: VtaRun[], name = "f", hw: VtaHardware = DEFAULT_VTA_HARDWARE): VtaBinary {
  return { hardware: hw.name, functions: { [name]: { runs } } };
}
