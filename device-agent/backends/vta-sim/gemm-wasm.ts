/**
 * The `wasm-simd` GEMM engine's kernels, generated for one hardware's block
 * sizes and exported from one WebAssembly module over the SRAM memory
 * (sram.ts):
 *
 * * `gemm` (signature GemmFn): the micro-op loop nest. For each output lane
 *   group of 4 it accumulates `i32x4.dot_i16x8_s(splat(INP pair p),
 *   WGT pairs p of those 4 lanes)` over the reduction pairs p — int8 widened
 *   to int16, pair products summed in int32 exactly, every sum wrapping, so
 *   the result equals the plain loop's bit for bit. Broadcasting the input
 *   pair (`v128.load32_splat`, a plain load on x64) instead of reducing
 *   four partial vectors per lane group keeps the kernel off the shuffle
 *   port, which bounded the earlier form (one int8 → int16 widening per
 *   weight load and a transpose per lane group, for every micro-op).
 * * `widen_inp(first, count)`: INP elements → their int16 copy (INP16).
 * * `pair_wgt(first, count)`: WGT elements → WGTP, each element's weights as
 *   int16 pairs, pair-major: vector (p, g) holds `(W[4g+q][2p], W[4g+q][2p+1])`
 *   for q = 0..3, the operand `gemm` multiplies the splatted pair p with.
 *
 * The engine calls the last two after every LOAD INP / LOAD WGT for the
 * elements written, so the copies always match the int8 buffers (which stay
 * the SRAMs that loads write and tests read). Needs blockIn % 8 == 0 (whole
 * 8-lane int8 → int16 loads) and blockOut % 4 == 0.
 */
import type { VtaHardware } from "../../../vta/index.ts";
import { sramLayout } from "./sram.ts";
import { Code, I32, V128, wasmModule } from "./wasm-asm.ts";

// Parameters and locals of `gemm`.
const P = { uopBgn: 0, uopEnd: 1, iterOut: 2, iterIn: 3, dfo: 4, dfi: 5, sfo: 6, sfi: 7, wfo: 8, wfi: 9 } as const;
const L = { y: 10, x: 11, u: 12, d0: 13, s0: 14, w0: 15, a: 16, i: 17, w: 18, ip: 19, wp: 20, k: 21 } as const;
const GEMM_V128 = 22;
/**
 * Input pairs per iteration of the reduction loop. The reduction is a loop,
 * not unrolled: fully unrolled, V8's optimizing compiler hoisted every weight
 * load to the top and spilled most of them to the stack (≈ 1.5× slower per
 * micro-op); two pairs per iteration measured fastest (one: +3 %, four: +25 %).
 */
const PAIRS_PER_ITERATION = 2;

/** The kernel module for `hw`: exports `gemm`, `widen_inp` and `pair_wgt`. */
export function wasmGemmModule(hw: VtaHardware): Uint8Array {
  const l = sramLayout(hw);
  return wasmModule(l.wasmPages, [gemmFunction(hw), widenInpFunction(hw), pairWgtFunction(hw)]);
}

function gemmFunction(hw: VtaHardware) {
  const { batch, blockIn: BI, blockOut: BO } = hw;
  const l = sramLayout(hw);
  const groups = BO / 4;
  // v128 locals: the splatted input pair, then one accumulator per lane group.
  const B = GEMM_V128;
  const G = (g: number) => GEMM_V128 + 1 + g;
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
  // Byte offsets of this uop's ACC, INP16 and WGTP elements (buffer bases go in the memargs).
  c.get(L.u).i32const(4).i32mul().i32load(l.uopDstBase).get(L.d0).i32add().i32const(hw.accElemBytes).i32mul().set(L.a);
  c.get(L.u).i32const(4).i32mul().i32load(l.uopSrcBase).get(L.s0).i32add().i32const(2 * hw.inpElemBytes).i32mul().set(L.i);
  c.get(L.u).i32const(4).i32mul().i32load(l.uopWgtBase).get(L.w0).i32add().i32const(2 * hw.wgtElemBytes).i32mul().set(L.w);
  for (let b = 0; b < batch; b++) {
    // G(g) = ACC lanes 4g..4g+3 of batch row b, plus every pair's products.
    const accOffset = (g: number) => l.accBase + (b * BO + 4 * g) * 4;
    for (let g = 0; g < groups; g++) c.get(L.a).v128load(accOffset(g)).set(G(g));
    c.get(L.i).i32const(b * BI * 2).i32add().set(L.ip);
    c.get(L.w).set(L.wp);
    c.i32const(BI / 2 / PAIRS_PER_ITERATION).set(L.k);
    c.loop(); // pairs
    for (let q = 0; q < PAIRS_PER_ITERATION; q++) {
      c.get(L.ip).load32Splat(l.inp16Base + 4 * q).set(B);
      for (let g = 0; g < groups; g++) {
        c.get(G(g)).get(B).get(L.wp).v128load(l.wgtPairBase + (q * groups + g) * 16).i32x4dotI16x8s().i32x4add().set(G(g));
      }
    }
    c.get(L.ip).i32const(4 * PAIRS_PER_ITERATION).i32add().set(L.ip);
    c.get(L.wp).i32const(16 * groups * PAIRS_PER_ITERATION).i32add().set(L.wp);
    c.get(L.k).i32const(-1).i32add().tee(L.k).brIf(0);
    c.end(); // pairs
    for (let g = 0; g < groups; g++) c.get(L.a).get(G(g)).v128store(accOffset(g));
  }
  c.get(L.u).i32const(1).i32add().tee(L.u).get(P.uopEnd).i32ltU().brIf(0);
  c.end(); // u
  c.get(L.x).i32const(1).i32add().tee(L.x).get(P.iterIn).i32ltU().brIf(0);
  c.end(); // x
  c.get(L.y).i32const(1).i32add().tee(L.y).get(P.iterOut).i32ltU().brIf(0);
  c.end(); // y
  c.end(); // block
  return {
    exportName: "gemm",
    params: Array(10).fill(I32),
    locals: [...Array(GEMM_V128 - 10).fill(I32), ...Array(1 + groups).fill(V128)],
    body: c,
  };
}

// Parameters and locals of the copy functions: (first, count), then the element index, its end, and the source / destination offsets.
const C = { first: 0, count: 1, e: 2, end: 3, src: 4, dst: 5 } as const;
const COPY_V128 = 6;

/** A loop over elements [first, first + count): `body` sees the element's source offset in C.src and destination offset in C.dst. */
function copyLoop(c: Code, srcBytes: number, dstBytes: number, body: () => void): void {
  c.block();
  c.get(C.count).i32eqz().brIf(0);
  c.get(C.first).tee(C.e).get(C.count).i32add().set(C.end);
  c.loop();
  c.get(C.e).i32const(srcBytes).i32mul().set(C.src);
  c.get(C.e).i32const(dstBytes).i32mul().set(C.dst);
  body();
  c.get(C.e).i32const(1).i32add().tee(C.e).get(C.end).i32ltU().brIf(0);
  c.end();
  c.end();
}

function widenInpFunction(hw: VtaHardware) {
  const l = sramLayout(hw);
  const c = new Code();
  copyLoop(c, hw.inpElemBytes, 2 * hw.inpElemBytes, () => {
    for (let k = 0; k < hw.inpElemBytes; k += 8) c.get(C.dst).get(C.src).load8x8s(l.inpBase + k).v128store(l.inp16Base + 2 * k);
  });
  return { exportName: "widen_inp", params: [I32, I32], locals: [I32, I32, I32, I32], body: c };
}

function pairWgtFunction(hw: VtaHardware) {
  const { blockIn: BI, blockOut: BO } = hw;
  const l = sramLayout(hw);
  const groups = BO / 4;
  // v128 locals: rows q = 0..3 of a lane group (4 pairs each), then the two transpose halves.
  const R = (q: number) => COPY_V128 + q;
  const T = (k: number) => COPY_V128 + 4 + k;
  const c = new Code();
  copyLoop(c, hw.wgtElemBytes, 2 * hw.wgtElemBytes, () => {
    for (let g = 0; g < groups; g++) {
      for (let h = 0; h < BI / 8; h++) {
        // R(q) = pairs 4h..4h+3 of output lane 4g + q, as int16 pairs (one per i32 lane).
        for (let q = 0; q < 4; q++) c.get(C.src).load8x8s(l.wgtBase + (4 * g + q) * BI + 8 * h).set(R(q));
        // A 4×4 transpose of i32 lanes: vector (p, g) = pair p of lanes 4g..4g+3.
        c.get(R(0)).get(R(1)).shuffle32([0, 4, 1, 5]).set(T(0));
        c.get(R(2)).get(R(3)).shuffle32([0, 4, 1, 5]).set(T(1));
        c.get(R(0)).get(R(1)).shuffle32([2, 6, 3, 7]).set(T(2));
        c.get(R(2)).get(R(3)).shuffle32([2, 6, 3, 7]).set(T(3));
        const out = (p: number) => l.wgtPairBase + (p * groups + g) * 16;
        c.get(C.dst).get(T(0)).get(T(1)).shuffle32([0, 1, 4, 5]).v128store(out(4 * h));
        c.get(C.dst).get(T(0)).get(T(1)).shuffle32([2, 3, 6, 7]).v128store(out(4 * h + 1));
        c.get(C.dst).get(T(2)).get(T(3)).shuffle32([0, 1, 4, 5]).v128store(out(4 * h + 2));
        c.get(C.dst).get(T(2)).get(T(3)).shuffle32([2, 3, 6, 7]).v128store(out(4 * h + 3));
      }
    }
  });
  return { exportName: "pair_wgt", params: [I32, I32], locals: [I32, I32, I32, I32, ...Array(8).fill(V128)], body: c };
}
