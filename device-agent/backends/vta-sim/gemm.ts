/**
 * The GEMM core: for every (y, x, uop) of an instruction's loop nest,
 * `ACC[a][b][j] += Σ_k INP[i][b][k] · WGT[w][j][k]` in wrapping int32
 * (§2.2.3 of the VTA spec). Two interchangeable engines:
 *
 * * `wasm-simd` — WebAssembly kernels generated for this hardware's block
 *   sizes (gemm-wasm.ts), fully unrolled over batch, lanes and the
 *   reduction, using `i32x4.dot_i16x8_s` on int16 copies of INP and WGT
 *   that it refreshes whenever a LOAD writes those buffers. Needs
 *   blockIn % 8 == 0 and blockOut % 4 == 0.
 * * `js` — plain typed-array loops; any block sizes. The reference the wasm
 *   engine is tested against, and the fallback.
 *
 * Index ranges are checked by the caller (execute.ts) before a kernel runs.
 */
import type { VtaHardware } from "../../../vta/index.ts";
import { wasmGemmModule } from "./gemm-wasm.ts";
import { Srams, sramLayout } from "./sram.ts";
import { Code, V128, wasmModule } from "./wasm-asm.ts";

export type GemmEngine = "wasm-simd" | "js";

/** The part of the WebAssembly JS API used here (this project's TypeScript libs do not declare it). */
declare const WebAssembly: {
  validate(bytes: Uint8Array): boolean;
  Memory: new (desc: { initial: number; maximum: number }) => { readonly buffer: ArrayBuffer };
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: Record<string, Record<string, unknown>>) => { readonly exports: Record<string, unknown> };
};

export type GemmFn = (
  uopBgn: number, uopEnd: number, iterOut: number, iterIn: number,
  dstFactorOut: number, dstFactorIn: number, srcFactorOut: number, srcFactorIn: number, wgtFactorOut: number, wgtFactorIn: number,
) => void;

export interface Core {
  readonly srams: Srams;
  readonly engine: GemmEngine;
  readonly gemm: GemmFn;
  /** Called after a LOAD wrote INP elements [first, first + count), so the engine's own copies follow. */
  readonly inpWritten: (first: number, count: number) => void;
  /** The same for WGT elements. */
  readonly wgtWritten: (first: number, count: number) => void;
}

/** Whether the wasm engine can serve this hardware in this runtime. */
export function wasmGemmSupported(hw: VtaHardware): boolean {
  return hw.blockIn % 8 === 0 && hw.blockOut % 4 === 0 && typeof WebAssembly === "object" && WebAssembly.validate(probeModule());
}

/** SRAMs plus a GEMM engine over them: `wasm-simd` when supported (unless `js` is asked for). */
export function createCore(hw: VtaHardware, prefer: GemmEngine = "wasm-simd"): Core {
  if (prefer === "wasm-simd" && wasmGemmSupported(hw)) {
    const layout = sramLayout(hw);
    const memory = new WebAssembly.Memory({ initial: layout.wasmPages, maximum: layout.wasmPages });
    const srams = new Srams(hw, memory.buffer);
    const module = new WebAssembly.Module(wasmGemmModule(hw));
    const instance = new WebAssembly.Instance(module, { env: { mem: memory } });
    type CopyFn = (first: number, count: number) => void;
    return {
      srams,
      engine: "wasm-simd",
      gemm: instance.exports.gemm as GemmFn,
      inpWritten: instance.exports.widen_inp as CopyFn,
      wgtWritten: instance.exports.pair_wgt as CopyFn,
    };
  }
  const srams = new Srams(hw);
  // The js engine reads the int8 buffers themselves: nothing to follow.
  const nothing = () => {};
  return { srams, engine: "js", gemm: jsGemm(srams), inpWritten: nothing, wgtWritten: nothing };
}

/** The plain-JS engine. */
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

let probe: Uint8Array | undefined;
/** A tiny module using the SIMD instructions above, to test for support. */
function probeModule(): Uint8Array {
  if (!probe) {
    const c = new Code();
    c.i32const(0).load32Splat(0).i32const(0).load8x8s(0).i32x4dotI16x8s().set(0);
    probe = wasmModule(1, [{ exportName: "p", params: [], locals: [V128], body: c }]);
  }
  return probe;
}
