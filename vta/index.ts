/** The VTA toolchain shared by the host compiler and the board simulator. */
export { DEFAULT_VTA_CONFIG, DEFAULT_VTA_HARDWARE, parseTvmVtaConfig, vtaHardware, type VtaConfig, type VtaHardware } from "./config.ts";
export {
  OPCODE,
  MEM,
  ALU_OP,
  NO_DEPS,
  encodeInsn,
  decodeInsn,
  encodeUop,
  decodeUop,
  insnLayouts,
  type Insn,
  type MemInsn,
  type GemmInsn,
  type AluInsn,
  type FinishInsn,
  type Uop,
  type DepFlags,
  type MemoryType,
  type AluOpcode,
} from "./isa.ts";
export { UOP_BUFFER, encodeVtaBinary, decodeVtaBinary, type VtaBinary, type VtaFunction, type VtaRun, type Relocation } from "./program.ts";
export { VtaCommandQueue, VTA_MAX_XFER, VTA_DEBUG, type VtaCommandQueueOptions, type UopKernelInit } from "./runtime.ts";
export { VtaRuntimeError, type VtaRuntimeErrorCode } from "./runtime-error.ts";
export { UopHandle, UopKernel, UOP_MODE, MAX_KERNEL_KEY, type UopLoop, type UopMode } from "./uop-kernel.ts";
export { UopCache, type UopPlacement } from "./uop-cache.ts";
export { InsnQueue, STAGE, memStage, insnStage, insnModule, nopInsn, type Stage, type QueueId } from "./insn-queue.ts";
export { formatInsn, insnKind, insnFields, insnFlags, runToStream, parseStreamText, relativeDram, type StreamLine, type ParsedStream } from "./stream-text.ts";
export { streamStats, emptyStats, decodeRun, checkDependencies, type VtaStreamStats, type TokenQueues, type DependencyCheck } from "./stream-analysis.ts";
export { disassemble, type DisasmOptions } from "./disasm.ts";
