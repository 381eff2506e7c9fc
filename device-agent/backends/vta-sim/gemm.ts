/**
 * The GEMM core: for every (y, x, uop) of an instruction's loop nest,
 * `ACC[a][b][j] += Σ_k INP[i][b][k] · WGT[w][j][k]` in wrapping int32
 * (§2.2.3 of the VTA spec). Two interchangeable engines:
 *
 * * `wasm-simd` — a WebAssembly kernel generated for this hardware's block
 *   sizes, fully unrolled over batch, lanes and the reduction, using
 *   `i32x4.dot_i16x8_s` (int8 widened to int16; pair products summed in int32
 *   exactly). Needs blockIn % 8 == 0 and blockOut % 4 == 0.
 * * `js` — plain typed-array loops; any block sizes. The reference the wasm
 *   engine is tested against, and the fallback.
 *
 * Index ranges are checked by the caller (execute.ts) before a kernel runs.
 */
import type { VtaHardware } from "../../../vta/index.ts";
import { Srams, sramLayout } from "./sram.ts";
import { Code, I32, V128, wasmModule } from "./wasm-asm.ts";

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
    return { srams, engine: "wasm-simd", gemm: instance.exports.gemm as GemmFn };
  }
  const srams = new Srams(hw);
  return { srams, engine: "js", gemm: jsGemm(srams) };
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

// Parameters and locals of the generated function.
const P = { uopBgn: 0, uopEnd: 1, iterOut: 2, iterIn: 3, dfo: 4, dfi: 5, sfo: 6, sfi: 7, wfo: 8, wfi: 9 } as const;
const L = { y: 10, x: 11, u: 12, d0: 13, s0: 14, w0: 15, a: 16, i: 17, w: 18 } as const;
const FIRST_V128 = 19;

/** The generated GEMM kernel for `hw` (exported as `gemm`, signature GemmFn). */
export function wasmGemmModule(hw: VtaHardware): Uint8Array {
  const { batch, blockIn: BI, blockOut: BO } = hw;
  const l = sramLayout(hw);
  const halves = BI / 8; // int8 → int16 loads of 8 lanes
  // v128 locals: the input halves, 4 per-lane partial vectors, 2 reduction temps.
  const X = (h: number) => FIRST_V128 + h;
  const V = (q: number) => FIRST_V128 + halves + q;
  const S1 = FIRST_V128 + halves + 4;
  const S2 = S1 + 1;
  const c = new Code();

  c.block();
  c.get(P.iterOut).i32eqz().brIf(0);
  c.get(P.iterIn).i32eqz().brIf(0);
  c.get(P.uopBgn).get(P.uopEnd).i32geU().brIf(0);
  c.i32const(0).set(L.y);
  c.loop(); // y
  c.i32const(0).set(L.x);
  c.loop(); // x
  c.get(L.y).get(P.dfo).i32mul().get(L.x).get(P.dfi).i32mul().i32add().set(L.d0);
  c.get(L.y).get(P.sfo).i32mul().get(L.x).get(P.sfi).i32mul().i32add().set(L.s0);
  c.get(L.y).get(P.wfo).i32mul().get(L.x).get(P.wfi).i32mul().i32add().set(L.w0);
  c.get(P.uopBgn).set(L.u);
  c.loop(); // u
  // Byte addresses of this uop's ACC, INP and WGT elements (buffer bases go in the memargs).
  c.get(L.u).i32const(4).i32mul().i32load(l.uopDstBase).get(L.d0).i32add().i32const(hw.accElemBytes).i32mul().set(L.a);
  c.get(L.u).i32const(4).i32mul().i32load(l.uopSrcBase).get(L.s0).i32add().i32const(hw.inpElemBytes).i32mul().set(L.i);
  c.get(L.u).i32const(4).i32mul().i32load(l.uopWgtBase).get(L.w0).i32add().i32const(hw.wgtElemBytes).i32mul().set(L.w);
  for (let b = 0; b < batch; b++) {
    for (let h = 0; h < halves; h++) c.get(L.i).load8x8s(l.inpBase + b * BI + 8 * h).set(X(h));
    for (let g = 0; g < BO / 4; g++) {
      // V(q) = the partial sums (4 lanes) of output lane 4g + q; their horizontal sums are the result.
      for (let q = 0; q < 4; q++) {
        const row = (4 * g + q) * BI;
        for (let h = 0; h < halves; h++) {
          c.get(X(h)).get(L.w).load8x8s(l.wgtBase + row + 8 * h).i32x4dotI16x8s();
          if (h > 0) c.i32x4add();
        }
        c.set(V(q));
      }
      // Transpose-and-add: (ΣV0, ΣV1, ΣV2, ΣV3).
      c.get(V(0)).get(V(1)).shuffle32([0, 4, 1, 5]).get(V(0)).get(V(1)).shuffle32([2, 6, 3, 7]).i32x4add().set(S1);
      c.get(V(2)).get(V(3)).shuffle32([0, 4, 1, 5]).get(V(2)).get(V(3)).shuffle32([2, 6, 3, 7]).i32x4add().set(S2);
      const accOffset = l.accBase + (b * BO + 4 * g) * 4;
      c.get(L.a); // store address
      c.get(L.a).v128load(accOffset);
      c.get(S1).get(S2).shuffle32([0, 1, 4, 5]).get(S1).get(S2).shuffle32([2, 3, 6, 7]).i32x4add();
      c.i32x4add().v128store(accOffset);
    }
  }
  c.get(L.u).i32const(1).i32add().tee(L.u).get(P.uopEnd).i32ltU().brIf(0);
  c.end(); // u
  c.get(L.x).i32const(1).i32add().tee(L.x).get(P.iterIn).i32ltU().brIf(0);
  c.end(); // x
  c.get(L.y).i32const(1).i32add().tee(L.y).get(P.iterOut).i32ltU().brIf(0);
  c.end(); // y
  c.end(); // block

  return wasmModule(l.wasmPages, [
    {
      exportName: "gemm",
      params: Array(10).fill(I32),
      locals: [...Array(FIRST_V128 - 10).fill(I32), ...Array(halves + 6).fill(V128)],
      body: c,
    },
  ]);
}

let probe: Uint8Array | undefined;
/** A tiny module using the SIMD instructions above, to test for support. */
function probeModule(): Uint8Array {
  if (!probe) {
    const c = new Code();
    c.i32const(0).load8x8s(0).i32const(0).load8x8s(0).i32x4dotI16x8s().set(0);
    probe = wasmModule(1, [{ exportName: "p", params: [], locals: [V128], body: c }]);
  }
  return probe;
}
