/**
 * The `js` engine of the compute core (core.ts): plain typed-array loops over
 * the int8 / int32 SRAMs, for any block sizes. It is the reference the
 * `wasm-simd` engine is tested against, and the fallback where that one
 * cannot run.
 */
import type { AluFn, GemmFn, ResetFn } from "./engine.ts";
import type { Srams } from "./sram.ts";

export function jsGemm(s: Srams): GemmFn {
  const { batch, blockIn: BI, blockOut: BO } = s.hw;
  const inp = s.inp;
  const wgt = s.wgt;
  const acc = s.acc;
  const ud = s.uopDst;
  const us = s.uopSrc;
  const uw = s.uopWgt;
  const inpElem = batch * BI;
  const wgtElem = BO * BI;
  const accElem = batch * BO;
  return (uopBgn, uopEnd, iterOut, iterIn, dfo, dfi, sfo, sfi, wfo, wfi) => {
    for (let y = 0; y < iterOut; y++) {
      for (let x = 0; x < iterIn; x++) {
        const d0 = y * dfo + x * dfi;
        const s0 = y * sfo + x * sfi;
        const w0 = y * wfo + x * wfi;
        for (let u = uopBgn; u < uopEnd; u++) {
          const a = (ud[u]! + d0) * accElem;
          const i = (us[u]! + s0) * inpElem;
          const w = (uw[u]! + w0) * wgtElem;
          for (let b = 0; b < batch; b++) {
            const ib = i + b * BI;
            const ab = a + b * BO;
            for (let j = 0; j < BO; j++) {
              const wj = w + j * BI;
              let sum = 0;
              for (let k = 0; k < BI; k++) sum = (sum + inp[ib + k]! * wgt[wj + k]!) | 0;
              acc[ab + j] = (acc[ab + j]! + sum) | 0;
            }
          }
        }
      }
    }
  };
}

export function jsReset(s: Srams): ResetFn {
  const acc = s.acc;
  const ud = s.uopDst;
  const lanes = s.hw.batch * s.hw.blockOut;
  return (uopBgn, uopEnd, iterOut, iterIn, dfo, dfi) => {
    for (let y = 0; y < iterOut; y++) {
      for (let x = 0; x < iterIn; x++) {
        const d0 = y * dfo + x * dfi;
        for (let u = uopBgn; u < uopEnd; u++) {
          const a = (ud[u]! + d0) * lanes;
          acc.fill(0, a, a + lanes);
        }
      }
    }
  };
}

/** Rows the ALU flattens before applying them (bounds its scratch memory). */
const ALU_CHUNK_ROWS = 1 << 16;

export function jsAlu(s: Srams): AluFn {
  const acc = s.acc;
  const ud = s.uopDst;
  const us = s.uopSrc;
  const lanes = s.hw.batch * s.hw.blockOut;
  /** Scratch for the flattened loop nest. */
  let dst = new Int32Array(0);
  let src = new Int32Array(0);
  return (op, useImm, imm, uopBgn, uopEnd, iterOut, iterIn, dfo, dfi, sfo, sfi) => {
    const execs = iterOut * iterIn * (uopEnd - uopBgn);
    const chunk = Math.min(execs, ALU_CHUNK_ROWS);
    if (dst.length < chunk) {
      dst = new Int32Array(chunk);
      src = new Int32Array(chunk);
    }
    const withImm = ALU_IMM[op]!;
    const withAcc = ALU_ACC[op]!;
    const flush = (n: number) => {
      if (useImm === 1) withImm(acc, dst, n, lanes, imm);
      else withAcc(acc, dst, src, n, lanes);
    };
    // The loop nest, flattened into lane offsets of ACC rows in execution order, applied a chunk at a time.
    let n = 0;
    for (let y = 0; y < iterOut; y++) {
      for (let x = 0; x < iterIn; x++) {
        const d0 = y * dfo + x * dfi;
        const s0 = y * sfo + x * sfi;
        for (let u = uopBgn; u < uopEnd; u++) {
          dst[n] = (ud[u]! + d0) * lanes;
          src[n] = (us[u]! + s0) * lanes;
          if (++n === chunk) {
            flush(n);
            n = 0;
          }
        }
      }
    }
    if (n > 0) flush(n);
  };
}

type AluImm = (acc: Int32Array, rows: Int32Array, n: number, lanes: number, imm: number) => void;
type AluAcc = (acc: Int32Array, dst: Int32Array, src: Int32Array, n: number, lanes: number) => void;

/**
 * `ACC[row] = op(ACC[row], imm)` for each of the `n` rows, in order, one
 * function per opcode (indexed by ALU_OP). One function serving every opcode
 * ran about twice as slowly per lane: V8 optimizes a function for the
 * opcodes it has seen, and re-optimized it as each new one came.
 */
const ALU_IMM: readonly AluImm[] = [
  // MIN
  (acc, rows, n, lanes, imm) => {
    for (let r = 0; r < n; r++) for (let k = rows[r]!, end = k + lanes; k < end; k++) if (acc[k]! > imm) acc[k] = imm;
  },
  // MAX
  (acc, rows, n, lanes, imm) => {
    for (let r = 0; r < n; r++) for (let k = rows[r]!, end = k + lanes; k < end; k++) if (acc[k]! < imm) acc[k] = imm;
  },
  // ADD
  (acc, rows, n, lanes, imm) => {
    for (let r = 0; r < n; r++) for (let k = rows[r]!, end = k + lanes; k < end; k++) acc[k] = (acc[k]! + imm) | 0;
  },
  // SHR (JavaScript takes shift amounts mod 32, as x86 does)
  (acc, rows, n, lanes, imm) => {
    if (imm >= 0) for (let r = 0; r < n; r++) for (let k = rows[r]!, end = k + lanes; k < end; k++) acc[k] = acc[k]! >> imm;
    else for (let r = 0; r < n; r++) for (let k = rows[r]!, end = k + lanes; k < end; k++) acc[k] = acc[k]! << -imm;
  },
  // MUL
  (acc, rows, n, lanes, imm) => {
    for (let r = 0; r < n; r++) for (let k = rows[r]!, end = k + lanes; k < end; k++) acc[k] = Math.imul(acc[k]!, imm);
  },
];

/** `ACC[dst] = op(ACC[dst], ACC[src])` lane by lane for each of the `n` row pairs, in order; one function per opcode, as above. */
const ALU_ACC: readonly AluAcc[] = [
  // MIN
  (acc, dst, src, n, lanes) => {
    for (let r = 0; r < n; r++) for (let a = dst[r]!, b = src[r]!, end = a + lanes; a < end; a++, b++) if (acc[b]! < acc[a]!) acc[a] = acc[b]!;
  },
  // MAX
  (acc, dst, src, n, lanes) => {
    for (let r = 0; r < n; r++) for (let a = dst[r]!, b = src[r]!, end = a + lanes; a < end; a++, b++) if (acc[b]! > acc[a]!) acc[a] = acc[b]!;
  },
  // ADD
  (acc, dst, src, n, lanes) => {
    for (let r = 0; r < n; r++) for (let a = dst[r]!, b = src[r]!, end = a + lanes; a < end; a++, b++) acc[a] = (acc[a]! + acc[b]!) | 0;
  },
  // SHR, each lane by its own amount
  (acc, dst, src, n, lanes) => {
    for (let r = 0; r < n; r++) {
      for (let a = dst[r]!, b = src[r]!, end = a + lanes; a < end; a++, b++) {
        const by = acc[b]!;
        acc[a] = by >= 0 ? acc[a]! >> by : acc[a]! << -by;
      }
    }
  },
  // MUL
  (acc, dst, src, n, lanes) => {
    for (let r = 0; r < n; r++) for (let a = dst[r]!, b = src[r]!, end = a + lanes; a < end; a++, b++) acc[a] = Math.imul(acc[a]!, acc[b]!);
  },
];
