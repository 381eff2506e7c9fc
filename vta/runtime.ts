/**
 * An emulation of the TVM VTA runtime's `CommandQueue` (vta/runtime/runtime.cc,
 * TVM v0.18.0; §7 of docs/vta-isa.md): the calls that compiled VTA code makes —
 * VTALoadBuffer2D, VTAStoreBuffer2D, VTAUopLoopBegin/End, VTAUopPush,
 * VTAPushGEMMOp, VTAPushALUOp, VTADepPush/Pop, VTASynchronize — turned into the
 * same instruction stream and micro-op buffer the runtime would hand to the
 * device, as vta/program.ts runs.
 *
 * Buffers are named by handle = index of the function parameter; DRAM
 * addresses are element offsets inside that buffer (the board adds
 * `phys / elem_bytes` when it places the buffers), and every LOAD / STORE gets
 * a relocation naming its buffer. LOAD UOP addresses the run's own uop buffer.
 *
 * Usage mirrors the C API:
 *
 * ```ts
 * const cmd = new VtaCommandQueue();
 * const site = new UopHandle("gemm");            // one per call site
 * cmd.depPop(1, 2);
 * cmd.pushGemmOp(site, () => {                   // records the kernel on first use
 *   cmd.uopLoopBegin(16, 1, 0, 1);
 *   cmd.uopPush(0, false, 0, 0, 0);
 *   cmd.uopLoopEnd();
 * });
 * const run = cmd.synchronize();
 * ```
 */
import { DEFAULT_VTA_HARDWARE, type VtaHardware } from "./config.ts";
import {
  ALU_OP,
  MEM,
  OPCODE,
  encodeInsn,
  encodeUop,
  type AluInsn,
  type AluOpcode,
  type GemmInsn,
  type Insn,
  type LoopFields,
  type MemInsn,
  type MemoryType,
} from "./isa.ts";
import { InsnQueue, STAGE, insnModule, memStage, type QueueId } from "./insn-queue.ts";
import { UOP_BUFFER, type Relocation, type VtaRun } from "./program.ts";
import { VtaRuntimeError } from "./runtime-error.ts";
import { UopCache } from "./uop-cache.ts";
import { UOP_MODE, UopHandle, UopKernel, type UopLoop, type UopMode } from "./uop-kernel.ts";

/** VTA_MAX_XFER: bytes of the instruction and of the uop DMA buffer (include/vta/driver.h). */
export const VTA_MAX_XFER = 1 << 25;

/** VTASetDebugMode flags. Only FORCE_SERIAL changes the stream. */
export const VTA_DEBUG = { DUMP_INSN: 1 << 1, DUMP_UOP: 1 << 2, SKIP_READ_BARRIER: 1 << 3, SKIP_WRITE_BARRIER: 1 << 4, FORCE_SERIAL: 1 << 5 } as const;

export interface VtaCommandQueueOptions {
  hardware?: VtaHardware;
  /** Size of the instruction and uop DMA buffers; default VTA_MAX_XFER. Smaller values make tests of the overflow sync cheap. */
  maxXferBytes?: number;
  /** VTASetDebugMode flags; default 0. */
  debugFlags?: number;
}

/** What a kernel-recording callback gets: the signature value (undefined for an empty closure). */
export type UopKernelInit = (signature: number | undefined) => void;

const INSN_HEADROOM = 6;

export class VtaCommandQueue {
  readonly hardware: VtaHardware;
  readonly maxXferBytes: number;
  debugFlags: number;
  private readonly insnQueue = new InsnQueue();
  private readonly uopCache: UopCache;
  private recording: UopKernel | undefined;
  private readonly finished: VtaRun[] = [];

  constructor(opts: VtaCommandQueueOptions = {}) {
    this.hardware = opts.hardware ?? DEFAULT_VTA_HARDWARE;
    this.maxXferBytes = opts.maxXferBytes ?? VTA_MAX_XFER;
    this.debugFlags = opts.debugFlags ?? 0;
    this.uopCache = new UopCache(this.hardware.uopDepth, Math.floor(this.maxXferBytes / this.hardware.uopElemBytes));
  }

  /** Instructions queued for the current run. */
  get insnCount(): number {
    return this.insnQueue.count;
  }

  /** The current run's instructions so far (live objects; for inspection). */
  get pendingInsns(): readonly Insn[] {
    return this.insnQueue.insns;
  }

  /** VTALoadBuffer2D: one LOAD in the stage of `memoryType` (INP, WGT: load; ACC, ACC_8BIT, UOP: compute). */
  loadBuffer2D(
    buffer: number,
    elemOffset: number,
    xSize: number,
    ySize: number,
    xStride: number,
    xPadBefore: number,
    yPadBefore: number,
    xPadAfter: number,
    yPadAfter: number,
    sramIndex: number,
    memoryType: MemoryType,
  ): void {
    checkBuffer(buffer);
    if (!Object.values(MEM).includes(memoryType) || memoryType === MEM.OUT) {
      throw new VtaRuntimeError("FIELD_RANGE", `LOAD memory type ${memoryType} is not UOP=0, WGT=1, INP=2, ACC=3 or ACC_8BIT=5`);
    }
    const insn = this.insnQueue.create(
      memStage(memoryType) as QueueId,
      {
        opcode: OPCODE.LOAD,
        memoryType,
        sramBase: sramIndex,
        dramBase: elemOffset,
        ySize,
        xSize,
        xStride,
        yPad0: yPadBefore,
        yPad1: yPadAfter,
        xPad0: xPadBefore,
        xPad1: xPadAfter,
      } satisfies Omit<MemInsn, "popPrev" | "popNext" | "pushPrev" | "pushNext">,
      buffer,
    );
    checkMemFields(insn, "LOAD");
    this.checkInsnOverflow();
  }

  /** VTAStoreBuffer2D: one STORE (pads 0) of `xSize × ySize` ACC elements from `sramIndex`. */
  storeBuffer2D(sramIndex: number, memoryType: MemoryType, buffer: number, elemOffset: number, xSize: number, ySize: number, xStride: number): void {
    checkBuffer(buffer);
    const insn = this.insnQueue.create(
      STAGE.STORE,
      {
        opcode: OPCODE.STORE,
        memoryType,
        sramBase: sramIndex,
        dramBase: elemOffset,
        ySize,
        xSize,
        xStride,
        yPad0: 0,
        yPad1: 0,
        xPad0: 0,
        xPad1: 0,
      } satisfies Omit<MemInsn, "popPrev" | "popNext" | "pushPrev" | "pushNext">,
      buffer,
    );
    checkMemFields(insn, "STORE");
    this.checkInsnOverflow();
  }

  /** VTAUopLoopBegin: only while a kernel is being recorded; at most 2, before the first uop. */
  uopLoopBegin(extent: number, dstFactor: number, srcFactor: number, wgtFactor: number): void {
    this.recordingKernel("VTAUopLoopBegin").loopBegin(extent, dstFactor, srcFactor, wgtFactor);
  }

  uopLoopEnd(): void {
    this.recordingKernel("VTAUopLoopEnd").loopEnd();
  }

  /** VTAUopPush(mode 0 = GEMM / 1 = ALU, reset_out, dst, src, wgt, opcode, use_imm, imm). */
  uopPush(mode: UopMode, resetOut: boolean, dst: number, src: number, wgt: number, opcode: AluOpcode = ALU_OP.MIN, useImm = false, imm = 0): void {
    this.recordingKernel("VTAUopPush").push(mode, resetOut, dst, src, wgt, opcode, useImm, imm);
  }

  /** VTAPushGEMMOp: gets (or records, on first use of this site and signature) the kernel; LOAD UOP if not resident; one GEMM. */
  pushGemmOp(site: UopHandle, finit: UopKernelInit, signature?: number): void {
    const kernel = this.kernelFor(site, finit, signature, UOP_MODE.GEMM);
    this.placeKernel(kernel);
    const [out, inn] = [kernel.loops[0], kernel.loops[1]];
    this.insnQueue.create(STAGE.COMPUTE, {
      opcode: OPCODE.GEMM,
      ...loopFields(kernel, out, inn),
      wgtFactorOut: out?.wgtFactor ?? 0,
      wgtFactorIn: inn?.wgtFactor ?? 0,
    } satisfies Omit<GemmInsn, "popPrev" | "popNext" | "pushPrev" | "pushNext">);
    this.checkInsnOverflow();
  }

  /** VTAPushALUOp: as pushGemmOp; a single uop loop becomes the *inner* loop (iter_out = 1). */
  pushAluOp(site: UopHandle, finit: UopKernelInit, signature?: number): void {
    const kernel = this.kernelFor(site, finit, signature, UOP_MODE.ALU);
    this.placeKernel(kernel);
    const loops = kernel.loops;
    const out = loops.length === 2 ? loops[0] : undefined;
    const inn = loops.length === 2 ? loops[1] : loops[0];
    this.insnQueue.create(STAGE.COMPUTE, {
      opcode: OPCODE.ALU,
      ...loopFields(kernel, out, inn),
      aluOpcode: kernel.aluOpcode ?? ALU_OP.MIN,
      useImm: kernel.useImm,
      imm: kernel.imm,
    } satisfies Omit<AluInsn, "popPrev" | "popNext" | "pushPrev" | "pushNext">);
    this.checkInsnOverflow();
  }

  /** VTADepPush(from, to). Queue ids: 1 load, 2 compute, 3 store. */
  depPush(from: QueueId, to: QueueId): void {
    this.insnQueue.depPush(from, to);
  }

  /** VTADepPop(from, to), executed by stage `to`. */
  depPop(from: QueueId, to: QueueId): void {
    this.insnQueue.depPop(from, to);
  }

  /** Pops that are pending (set but not yet carried by an instruction). */
  pendingPops(): { stage: QueueId; popPrev: boolean; popNext: boolean }[] {
    return this.insnQueue.pendingPops();
  }

  /**
   * VTASynchronize: the dependency epilogue, FINISH, and the run (returned,
   * and kept for takeRuns). Both queues are reset and every kernel stops being
   * resident.
   */
  synchronize(): VtaRun {
    const q = this.insnQueue;
    if (this.debugFlags & VTA_DEBUG.FORCE_SERIAL) {
      this.rewriteForceSerial();
    } else {
      q.depPush(STAGE.STORE, STAGE.COMPUTE);
      q.depPush(STAGE.LOAD, STAGE.COMPUTE);
      q.depPop(STAGE.STORE, STAGE.COMPUTE);
      q.depPop(STAGE.LOAD, STAGE.COMPUTE);
      q.commitPendingPop(STAGE.COMPUTE);
    }
    q.create(STAGE.COMPUTE, { opcode: OPCODE.FINISH });
    if (q.hasPendingPop()) {
      const p = q
        .pendingPops()
        .map((s) => `stage ${s.stage}`)
        .join(", ");
      throw new VtaRuntimeError("DEPENDENCE", `a dependency pop is still pending at FINISH (${p})`);
    }
    const run = this.encodeRun();
    q.reset();
    this.uopCache.reset();
    this.finished.push(run);
    return run;
  }

  /** Every run synchronized so far (explicit and overflow syncs), oldest first; the list is emptied. */
  takeRuns(): VtaRun[] {
    return this.finished.splice(0);
  }

  // ---- internals

  private recordingKernel(call: string): UopKernel {
    if (!this.recording) throw new VtaRuntimeError("UOP_RECORDING", `${call} outside a uop kernel recording (call it from the kernel's init callback)`);
    return this.recording;
  }

  private kernelFor(site: UopHandle, finit: UopKernelInit, signature: number | undefined, mode: UopMode): UopKernel {
    const key = UopHandle.key(signature);
    site.bind(this);
    let kernel = site.get(key);
    if (!kernel) {
      if (this.recording) throw new VtaRuntimeError("UOP_RECORDING", "a uop kernel is pushed while another one is being recorded");
      kernel = new UopKernel(key, this.hardware);
      this.recording = kernel;
      try {
        finit(signature);
      } finally {
        this.recording = undefined;
      }
      if (kernel.size === 0) throw new VtaRuntimeError("UOP_KERNEL", `uop kernel ${site.name}[key ${key}] recorded no uops`);
      site.set(key, kernel);
    }
    if (kernel.mode !== mode) {
      throw new VtaRuntimeError(
        "UOP_MISMATCH",
        `uop kernel ${site.name}[key ${key}] holds ${kernel.mode === UOP_MODE.GEMM ? "GEMM" : "ALU"} uops but is pushed as ${mode === UOP_MODE.GEMM ? "GEMM" : "ALU"}`,
      );
    }
    return kernel;
  }

  /** The uop cache step of PushGEMMOp / PushALUOp: place, and emit LOAD UOP for a new placement. */
  private placeKernel(kernel: UopKernel): void {
    if (this.uopCache.needsFlushFor(kernel)) this.synchronize();
    const placed = this.uopCache.place(kernel);
    if (placed) {
      this.insnQueue.create(
        STAGE.COMPUTE,
        {
          opcode: OPCODE.LOAD,
          memoryType: MEM.UOP,
          sramBase: placed.sramBase,
          dramBase: placed.dramOffset,
          ySize: 1,
          xSize: placed.count,
          xStride: placed.count,
          yPad0: 0,
          yPad1: 0,
          xPad0: 0,
          xPad1: 0,
        } satisfies Omit<MemInsn, "popPrev" | "popNext" | "pushPrev" | "pushNext">,
        UOP_BUFFER,
      );
    }
  }

  /** CheckInsnOverFlow: synchronize on our own when the instruction buffer would overflow. */
  private checkInsnOverflow(): void {
    if ((this.insnQueue.count + INSN_HEADROOM) * this.hardware.insnBytes > this.maxXferBytes) this.synchronize();
  }

  private encodeRun(): VtaRun {
    const q = this.insnQueue;
    const hw = this.hardware;
    const insns = new Uint8Array(q.count * hw.insnBytes);
    const relocations: Relocation[] = [];
    q.insns.forEach((insn, i) => {
      try {
        encodeInsn(insn, hw, insns, i * hw.insnBytes);
      } catch (err) {
        throw new VtaRuntimeError("FIELD_RANGE", `instruction ${i}: ${(err as Error).message}`);
      }
      const buffer = q.buffers[i];
      if (buffer !== undefined && (insn.opcode === OPCODE.LOAD || insn.opcode === OPCODE.STORE) && insn.xSize !== 0) {
        relocations.push({ insn: i, buffer });
      }
    });
    const log = this.uopCache.dmaBuffer();
    const uops = new Uint8Array(log.length * hw.uopElemBytes);
    const view = new DataView(uops.buffer);
    log.forEach((u, i) => view.setUint32(i * 4, encodeUop(u, hw), true));
    return { insns, uops, relocations };
  }

  /**
   * FORCE_SERIAL (VTASetDebugMode): rewrite every flag so that each module
   * waits for the previous instruction's module, then add epilogue NOPs so that
   * FINISH waits for everything.
   */
  private rewriteForceSerial(): void {
    const q = this.insnQueue;
    const insns = q.insns;
    let lastStore: Insn | undefined;
    let last: Insn | undefined;
    for (let i = 1; i < insns.length; i++) {
      const a = insns[i - 1]!;
      const b = insns[i]!;
      const prev = insnModule(a);
      const now = insnModule(b);
      const set = (pushPrev: boolean, pushNext: boolean, popPrev: boolean, popNext: boolean) => {
        a.pushPrev = pushPrev;
        a.pushNext = pushNext;
        b.popPrev = popPrev;
        b.popNext = popNext;
      };
      if ((prev === STAGE.LOAD && now === STAGE.COMPUTE) || (prev === STAGE.COMPUTE && now === STAGE.STORE)) set(false, true, true, false);
      else if ((prev === STAGE.COMPUTE && now === STAGE.LOAD) || (prev === STAGE.STORE && now === STAGE.COMPUTE)) set(true, false, false, true);
      else set(false, false, false, false);
      if (now === STAGE.STORE) lastStore = b;
      last = b;
    }
    if (lastStore && last === lastStore) {
      lastStore.pushPrev = true;
      if (!q.pendingPops().some((p) => p.stage === STAGE.COMPUTE && p.popNext)) q.depPop(STAGE.STORE, STAGE.COMPUTE);
      q.commitPendingPop(STAGE.COMPUTE);
    } else {
      q.dropPendingPopNext(STAGE.COMPUTE);
    }
    q.depPush(STAGE.COMPUTE, STAGE.LOAD);
    q.depPop(STAGE.LOAD, STAGE.COMPUTE);
    if (!q.pendingPops().some((p) => p.stage === STAGE.LOAD && p.popNext)) q.depPop(STAGE.COMPUTE, STAGE.LOAD);
    q.commitPendingPop(STAGE.LOAD);
    q.depPush(STAGE.LOAD, STAGE.COMPUTE);
    q.commitPendingPop(STAGE.COMPUTE);
  }
}

function checkBuffer(buffer: number): void {
  if (!Number.isInteger(buffer) || buffer < 0) throw new VtaRuntimeError("FIELD_RANGE", `buffer handle ${buffer} is not a parameter index`);
}

function checkMemFields(insn: MemInsn, what: string): void {
  const limits: [keyof MemInsn, number][] = [
    ["sramBase", 16],
    ["dramBase", 32],
    ["ySize", 16],
    ["xSize", 16],
    ["xStride", 16],
    ["yPad0", 4],
    ["yPad1", 4],
    ["xPad0", 4],
    ["xPad1", 4],
  ];
  for (const [field, bits] of limits) {
    const v = insn[field] as number;
    if (!Number.isInteger(v) || v < 0 || v >= 2 ** bits) {
      throw new VtaRuntimeError("FIELD_RANGE", `${what} ${field} = ${v} does not fit its ${bits}-bit field`);
    }
  }
}

/** The loop-nest fields GEMM and ALU share, from a kernel and its outer / inner uop loop. */
function loopFields(kernel: UopKernel, out: UopLoop | undefined, inn: UopLoop | undefined): LoopFields {
  return {
    resetReg: kernel.resetOut ?? false,
    uopBgn: kernel.sramBegin,
    uopEnd: kernel.sramEnd,
    iterOut: out?.extent ?? 1,
    iterIn: inn?.extent ?? 1,
    dstFactorOut: out?.dstFactor ?? 0,
    dstFactorIn: inn?.dstFactor ?? 0,
    srcFactorOut: out?.srcFactor ?? 0,
    srcFactorIn: inn?.srcFactor ?? 0,
  };
}
