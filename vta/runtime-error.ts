/**
 * The error the VTA runtime emulation throws when a call sequence breaks one
 * of the TVM runtime's checks (its `CHECK`s, which abort the process in TVM).
 * vta/ stays free of the gRPC-bound FarmError; the host compiler turns these
 * into `FarmError("COMPILE_ERROR")`.
 */

/** Which rule was broken; stable, for tests and for callers that branch on it. */
export type VtaRuntimeErrorCode =
  /** a uop loop or push outside a kernel recording, or more than 2 loops, or a loop after the first uop */
  | "UOP_RECORDING"
  /** VerifyDep: a uop writes the same ACC index as one of the two uops before it */
  | "UOP_DEPENDENCE"
  /** uops of one kernel disagree on mode, reset, ALU opcode or immediate */
  | "UOP_MISMATCH"
  /** kernel key out of range (signature not one int32, or key ≥ 100), or a kernel larger than the uop SRAM */
  | "UOP_KERNEL"
  /** a value does not fit its instruction or micro-op field */
  | "FIELD_RANGE"
  /** a forbidden dependency (load ↔ store), a bad stage, or a pop still pending at FINISH */
  | "DEPENDENCE";

export class VtaRuntimeError extends Error {
  override readonly name = "VtaRuntimeError";
  constructor(
    readonly code: VtaRuntimeErrorCode,
    message: string,
  ) {
    super(message);
  }
}
