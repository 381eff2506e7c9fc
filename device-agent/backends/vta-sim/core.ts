/**
 * The compute core of one simulated VTA: its SRAMs and an engine for the
 * loop-nest instructions over them (§4 of docs/vta-isa.md), each applying
 * its body for every (y, x, uop) of the nest, in that order:
 *
 * * GEMM: `ACC[a][b][j] += Σ_k INP[i][b][k] · WGT[w][j][k]` in wrapping int32;
 *   with reset_reg, `ACC[a] = 0`.
 * * ALU: `ACC[a] = op(ACC[a], imm or ACC[s])` lane by lane: MIN, MAX, ADD
 *   (wrapping), SHR (arithmetic; a negative amount shifts left; like the C++
 *   simulator on x86 the amount is taken mod 32), MUL (wrapping; the
 *   functional simulator's extension).
 *
 * Two interchangeable engines, equal bit for bit:
 *
 * * `wasm-simd` — WebAssembly kernels generated for this hardware's block
 *   sizes (core-wasm.ts); the GEMM multiplies int16 copies of INP and WGT
 *   that it refreshes whenever a LOAD writes those buffers. Needs
 *   blockIn % 8 == 0 and blockOut % 4 == 0.
 * * `js` — plain typed-array loops (core-js.ts); any block sizes. The
 *   reference the wasm engine is tested against, and the fallback.
 *
 * Index ranges are checked by the caller (execute.ts) before a kernel runs.
 */
import type { VtaHardware } from "../../../vta/index.ts";
import { jsAlu, jsGemm, jsReset } from "./core-js.ts";
import type { AluFn, GemmFn, ResetFn } from "./engine.ts";
import { wasmCoreModule } from "./core-wasm.ts";
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

export interface Core {
  readonly srams: Srams;
  readonly engine: GemmEngine;
  readonly gemm: GemmFn;
  readonly reset: ResetFn;
  readonly alu: AluFn;
  /** Called after a LOAD wrote INP elements [first, first + count), so the engine's own copies follow. */
  readonly inpWritten: (first: number, count: number) => void;
  /** The same for WGT elements. */
  readonly wgtWritten: (first: number, count: number) => void;
}

/** Whether the wasm engine can serve this hardware in this runtime. */
export function wasmGemmSupported(hw: VtaHardware): boolean {
  return hw.blockIn % 8 === 0 && hw.blockOut % 4 === 0 && typeof WebAssembly === "object" && WebAssembly.validate(probeModule());
}

/** SRAMs plus an engine over them: `wasm-simd` when supported (unless `js` is asked for). */
export function createCore(hw: VtaHardware, prefer: GemmEngine = "wasm-simd"): Core {
  if (prefer === "wasm-simd" && wasmGemmSupported(hw)) {
    const layout = sramLayout(hw);
    const memory = new WebAssembly.Memory({ initial: layout.wasmPages, maximum: layout.wasmPages });
    const srams = new Srams(hw, memory.buffer);
    const module = new WebAssembly.Module(wasmCoreModule(hw));
    const { exports } = new WebAssembly.Instance(module, { env: { mem: memory } });
    type CopyFn = (first: number, count: number) => void;
    return {
      srams,
      engine: "wasm-simd",
      gemm: exports.gemm as GemmFn,
      reset: exports.reset as ResetFn,
      alu: exports.alu as AluFn,
      inpWritten: exports.widen_inp as CopyFn,
      wgtWritten: exports.pair_wgt as CopyFn,
    };
  }
  const srams = new Srams(hw);
  // The js engine reads the int8 buffers themselves: nothing to follow.
  const nothing = () => {};
  return { srams, engine: "js", gemm: jsGemm(srams), reset: jsReset(srams), alu: jsAlu(srams), inpWritten: nothing, wgtWritten: nothing };
}

let probe: Uint8Array | undefined;
/** A tiny module using the SIMD instructions the engine does, to test for support. */
function probeModule(): Uint8Array {
  if (!probe) {
    const c = new Code();
    c.i32const(0).load32Splat(0).i32const(0).load8x8s(0).i32x4dotI16x8s().i32const(1).i32x4splat().i32x4maxS().set(0);
    probe = wasmModule(1, [{ exportName: "p", params: [], locals: [V128], body: c }]);
  }
  return probe;
}
