/**
 * The compute core's three entry points, as both engines provide them: the
 * `js` loops (core-js.ts) and the `wasm-simd` module (core-wasm.ts), chosen
 * by core.ts.
 */
export type GemmFn = (
  uopBgn: number,
  uopEnd: number,
  iterOut: number,
  iterIn: number,
  dstFactorOut: number,
  dstFactorIn: number,
  srcFactorOut: number,
  srcFactorIn: number,
  wgtFactorOut: number,
  wgtFactorIn: number,
) => void;

/** GEMM with reset_reg: zeroes the ACC element of every (y, x, uop). */
export type ResetFn = (uopBgn: number, uopEnd: number, iterOut: number, iterIn: number, dstFactorOut: number, dstFactorIn: number) => void;

/** `op` an ALU_OP; `useImm` 1 for the immediate, 0 for ACC[src]. */
export type AluFn = (
  op: number,
  useImm: number,
  imm: number,
  uopBgn: number,
  uopEnd: number,
  iterOut: number,
  iterIn: number,
  dstFactorOut: number,
  dstFactorIn: number,
  srcFactorOut: number,
  srcFactorIn: number,
) => void;
