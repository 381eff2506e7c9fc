/** The VTA toolchain shared by the host compiler and the board simulator. */
export { DEFAULT_VTA_CONFIG, DEFAULT_VTA_HARDWARE, vtaHardware, type VtaConfig, type VtaHardware } from "./config.ts";
export {
  OPCODE, MEM, ALU_OP, NO_DEPS, encodeInsn, decodeInsn, encodeUop, decodeUop, insnLayouts,
  type Insn, type MemInsn, type GemmInsn, type AluInsn, type FinishInsn, type Uop, type DepFlags, type MemoryType, type AluOpcode,
} from "./isa.ts";
export { UOP_BUFFER, encodeVtaBinary, decodeVtaBinary, type VtaBinary, type VtaFunction, type VtaRun, type Relocation } from "./program.ts";
