/**
 * The `wasm-simd` engine of the compute core (core.ts): one WebAssembly
 * module over the SRAM memory (sram.ts), generated for one hardware's block
 * sizes. Its exports:
 *
 * * `gemm` (GemmFn): for each output lane group of 4 it accumulates
 *   `i32x4.dot_i16x8_s(splat(INP pair p), WGT pairs p of those 4 lanes)`
 *   over the reduction pairs p — int8 widened to int16, pair products summed
 *   in int32 exactly, every sum wrapping, so the result equals the plain loop's
 *   bit for bit. Broadcasting the input pair (`v128.load32_splat`, a plain
 *   load on x64) instead of reducing four partial vectors per lane group
 *   keeps the kernel off the shuffle port, and the reduction is a loop, not
 *   unrolled: fully unrolled, V8's optimizing compiler hoisted every weight
 *   load to the top and spilled most of them to the stack. On the conv2d
 *   tutorial's nest: 10.1 ns per micro-op, against 15.5 for the earlier
 *   unrolled form that widened every weight and transposed every lane group.
 * * `reset` (ResetFn) and `alu` (AluFn): four lanes per instruction, with
 *   no data-dependent branches — MIN and MAX as JavaScript compares
 *   mispredicted on real activations and took ~95 µs per 784-row
 *   instruction.
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
import { sramLayout, type SramLayout } from "./sram.ts";
import { Code, I32, V128, wasmModule, type WasmFunction } from "./wasm-asm.ts";

/** The core module for `hw`: exports `gemm`, `reset`, `alu`, `widen_inp` and `pair_wgt`. */
export function wasmCoreModule(hw: VtaHardware): Uint8Array {
  const l = sramLayout(hw);
  return wasmModule(l.wasmPages, [gemmFunction(hw, l), resetFunction(hw, l), aluFunction(hw, l), widenInpFunction(hw, l), pairWgtFunction(hw, l)]);
}

/** Locals a loop nest uses: its counters, and where it keeps the (y, x) offsets of dst / src / wgt indices. */
interface NestLocals {
  uopBgn: number;
  uopEnd: number;
  iterOut: number;
  iterIn: number;
  y: number;
  x: number;
  u: number;
}

/**
 * `for y < iterOut, x < iterIn: perXY(); for u in [uopBgn, uopEnd): perUop()`,
 * skipped entirely when any range is empty (so the loops may test at the end).
 */
function loopNest(c: Code, n: NestLocals, perXY: () => void, perUop: () => void): void {
  c.block();
  c.get(n.iterOut).i32eqz().brIf(0);
  c.get(n.iterIn).i32eqz().brIf(0);
  c.get(n.uopBgn).get(n.uopEnd).i32geU().brIf(0);
  c.i32const(0).set(n.y);
  c.loop(); // y
  c.i32const(0).set(n.x);
  c.loop(); // x
  perXY();
  c.get(n.uopBgn).set(n.u);
  c.loop(); // u
  perUop();
  c.get(n.u).i32const(1).i32add().tee(n.u).get(n.uopEnd).i32ltU().brIf(0);
  c.end(); // u
  c.get(n.x).i32const(1).i32add().tee(n.x).get(n.iterIn).i32ltU().brIf(0);
  c.end(); // x
  c.get(n.y).i32const(1).i32add().tee(n.y).get(n.iterOut).i32ltU().brIf(0);
  c.end(); // y
  c.end(); // block
}

/** `offset = y · factorOut + x · factorIn`. */
function nestOffset(c: Code, n: NestLocals, factorOut: number, factorIn: number, offset: number): void {
  c.get(n.y).get(factorOut).i32mul().get(n.x).get(factorIn).i32mul().i32add().set(offset);
}

/** `to = (fieldTable[u] + offset) · elemBytes`: the byte offset of this uop's element. */
function uopElement(c: Code, n: NestLocals, fieldTableBase: number, offset: number, elemBytes: number, to: number): void {
  c.get(n.u).i32const(4).i32mul().i32load(fieldTableBase).get(offset).i32add().i32const(elemBytes).i32mul().set(to);
}

/** Input pairs per iteration of the GEMM's reduction loop: two measured fastest (one: +3 %, four: +25 % per micro-op). */
const PAIRS_PER_ITERATION = 2;

function gemmFunction(hw: VtaHardware, l: SramLayout): WasmFunction {
  const { batch, blockIn: BI, blockOut: BO } = hw;
  const P = { uopBgn: 0, uopEnd: 1, iterOut: 2, iterIn: 3, dfo: 4, dfi: 5, sfo: 6, sfi: 7, wfo: 8, wfi: 9 } as const;
  const L = { y: 10, x: 11, u: 12, d0: 13, s0: 14, w0: 15, a: 16, i: 17, w: 18, ip: 19, wp: 20, k: 21 } as const;
  const n: NestLocals = { ...P, ...L };
  const groups = BO / 4;
  // v128 locals: the splatted input pair, then one accumulator per lane group.
  const B = 22;
  const G = (g: number) => B + 1 + g;
  const c = new Code();
  loopNest(
    c,
    n,
    () => {
      nestOffset(c, n, P.dfo, P.dfi, L.d0);
      nestOffset(c, n, P.sfo, P.sfi, L.s0);
      nestOffset(c, n, P.wfo, P.wfi, L.w0);
    },
    () => {
      // Byte offsets of this uop's ACC, INP16 and WGTP elements (buffer bases go in the memargs).
      uopElement(c, n, l.uopDstBase, L.d0, hw.accElemBytes, L.a);
      uopElement(c, n, l.uopSrcBase, L.s0, 2 * hw.inpElemBytes, L.i);
      uopElement(c, n, l.uopWgtBase, L.w0, 2 * hw.wgtElemBytes, L.w);
      for (let b = 0; b < batch; b++) {
        // G(g) = ACC lanes 4g..4g+3 of batch row b, plus every pair's products.
        const accOffset = (g: number) => l.accBase + (b * BO + 4 * g) * 4;
        for (let g = 0; g < groups; g++) c.get(L.a).v128load(accOffset(g)).set(G(g));
        c.get(L.i)
          .i32const(b * BI * 2)
          .i32add()
          .set(L.ip);
        c.get(L.w).set(L.wp);
        c.i32const(BI / 2 / PAIRS_PER_ITERATION).set(L.k);
        c.loop(); // pairs
        for (let q = 0; q < PAIRS_PER_ITERATION; q++) {
          c.get(L.ip)
            .load32Splat(l.inp16Base + 4 * q)
            .set(B);
          for (let g = 0; g < groups; g++) {
            c.get(G(g))
              .get(B)
              .get(L.wp)
              .v128load(l.wgtPairBase + (q * groups + g) * 16)
              .i32x4dotI16x8s()
              .i32x4add()
              .set(G(g));
          }
        }
        c.get(L.ip)
          .i32const(4 * PAIRS_PER_ITERATION)
          .i32add()
          .set(L.ip);
        c.get(L.wp)
          .i32const(16 * groups * PAIRS_PER_ITERATION)
          .i32add()
          .set(L.wp);
        c.get(L.k).i32const(-1).i32add().tee(L.k).brIf(0);
        c.end(); // pairs
        for (let g = 0; g < groups; g++) c.get(L.a).get(G(g)).v128store(accOffset(g));
      }
    },
  );
  return { exportName: "gemm", params: Array(10).fill(I32), locals: [...Array(B - 10).fill(I32), ...Array(1 + groups).fill(V128)], body: c };
}

function resetFunction(hw: VtaHardware, l: SramLayout): WasmFunction {
  const P = { uopBgn: 0, uopEnd: 1, iterOut: 2, iterIn: 3, dfo: 4, dfi: 5 } as const;
  const L = { y: 6, x: 7, u: 8, d0: 9, a: 10 } as const;
  const n: NestLocals = { ...P, ...L };
  const ZERO = 11;
  const c = new Code();
  c.i32const(0).i32x4splat().set(ZERO);
  loopNest(
    c,
    n,
    () => nestOffset(c, n, P.dfo, P.dfi, L.d0),
    () => {
      uopElement(c, n, l.uopDstBase, L.d0, hw.accElemBytes, L.a);
      for (let v = 0; v < hw.accElemBytes / 16; v++)
        c.get(L.a)
          .get(ZERO)
          .v128store(l.accBase + 16 * v);
    },
  );
  return { exportName: "reset", params: Array(6).fill(I32), locals: [...Array(ZERO - 6).fill(I32), V128], body: c };
}

/** The ALU's loop nests, one per variant, chosen once per instruction. */
const ALU_VARIANTS = ["MIN imm", "MAX imm", "ADD imm", "SHR imm", "MUL imm", "SHL imm", "MIN", "MAX", "ADD", "SHR", "MUL"] as const;

function aluFunction(hw: VtaHardware, l: SramLayout): WasmFunction {
  const P = { op: 0, useImm: 1, imm: 2, uopBgn: 3, uopEnd: 4, iterOut: 5, iterIn: 6, dfo: 7, dfi: 8, sfo: 9, sfi: 10 } as const;
  const L = { y: 11, x: 12, u: 13, d0: 14, s0: 15, a: 16, b: 17, by: 18, value: 19 } as const;
  const n: NestLocals = { ...P, ...L };
  const IMM = 20;
  const vectors = hw.accElemBytes / 16;
  const c = new Code();
  c.get(P.imm).i32x4splat().set(IMM);
  // Variant: with an immediate, the opcode (SHR by a negative amount: "SHL imm", 5); without, 6 + opcode.
  const variants = ALU_VARIANTS.length;
  c.block(); // after every variant
  for (let v = variants - 1; v >= 0; v--) c.block();
  c.i32const(5).get(P.op).get(P.op).i32const(3).i32eq().get(P.imm).i32const(0).i32ltS().i32and().select(); // imm: op, or 5
  c.get(P.op).i32const(6).i32add(); // no imm
  c.get(P.useImm).select();
  c.brTable([...Array(variants).keys()], variants);
  for (let v = 0; v < variants; v++) {
    c.end(); // block v: variant v follows
    const variant = ALU_VARIANTS[v]!;
    loopNest(
      c,
      n,
      () => {
        nestOffset(c, n, P.dfo, P.dfi, L.d0);
        nestOffset(c, n, P.sfo, P.sfi, L.s0);
      },
      () => {
        uopElement(c, n, l.uopDstBase, L.d0, hw.accElemBytes, L.a);
        if (!variant.endsWith("imm")) uopElement(c, n, l.uopSrcBase, L.s0, hw.accElemBytes, L.b);
        aluRow(c, variant, l.accBase, vectors, P.imm, IMM, L);
      },
    );
    if (v < variants - 1) c.br(variants - 1 - v);
  }
  c.end(); // after every variant
  return { exportName: "alu", params: Array(11).fill(I32), locals: [...Array(IMM - 11).fill(I32), V128], body: c };
}

/** One ACC row (at byte offset L.a, operand row at L.b) of an ALU variant, in lane order. */
function aluRow(
  c: Code,
  variant: (typeof ALU_VARIANTS)[number],
  accBase: number,
  vectors: number,
  imm: number,
  immVector: number,
  L: { a: number; b: number; by: number; value: number },
): void {
  if (variant === "SHR") {
    // Each lane shifts by its own amount, which no SIMD shift does: lane by lane, branch-free.
    for (let k = 0; k < vectors * 4; k++) {
      const at = accBase + 4 * k;
      c.get(L.b).i32load(at).set(L.by);
      c.get(L.a).i32load(at).set(L.value);
      c.get(L.a);
      c.get(L.value).get(L.by).i32shrS();
      c.get(L.value).i32const(0).get(L.by).i32sub().i32shl();
      c.get(L.by).i32const(0).i32geS().select();
      c.i32store(at);
    }
    return;
  }
  for (let v = 0; v < vectors; v++) {
    const at = accBase + 16 * v;
    c.get(L.a); // store address
    c.get(L.a).v128load(at);
    switch (variant) {
      case "SHR imm":
        c.get(imm).i32x4shrS();
        break;
      case "SHL imm":
        c.i32const(0).get(imm).i32sub().i32x4shl();
        break;
      default: {
        if (variant.endsWith("imm")) c.get(immVector);
        else c.get(L.b).v128load(at);
        const op = variant.split(" ")[0];
        if (op === "MIN") c.i32x4minS();
        else if (op === "MAX") c.i32x4maxS();
        else if (op === "ADD") c.i32x4add();
        else c.i32x4mul();
      }
    }
    c.v128store(at);
  }
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

function widenInpFunction(hw: VtaHardware, l: SramLayout): WasmFunction {
  const c = new Code();
  copyLoop(c, hw.inpElemBytes, 2 * hw.inpElemBytes, () => {
    for (let k = 0; k < hw.inpElemBytes; k += 8)
      c.get(C.dst)
        .get(C.src)
        .load8x8s(l.inpBase + k)
        .v128store(l.inp16Base + 2 * k);
  });
  return { exportName: "widen_inp", params: [I32, I32], locals: [I32, I32, I32, I32], body: c };
}

function pairWgtFunction(hw: VtaHardware, l: SramLayout): WasmFunction {
  const { blockIn: BI, blockOut: BO } = hw;
  const groups = BO / 4;
  // v128 locals: rows q = 0..3 of a lane group (4 pairs each), then the two transpose halves.
  const R = (q: number) => COPY_V128 + q;
  const T = (k: number) => COPY_V128 + 4 + k;
  const c = new Code();
  copyLoop(c, hw.wgtElemBytes, 2 * hw.wgtElemBytes, () => {
    for (let g = 0; g < groups; g++) {
      for (let h = 0; h < BI / 8; h++) {
        // R(q) = pairs 4h..4h+3 of output lane 4g + q, as int16 pairs (one per i32 lane).
        for (let q = 0; q < 4; q++)
          c.get(C.src)
            .load8x8s(l.wgtBase + (4 * g + q) * BI + 8 * h)
            .set(R(q));
        // A 4×4 transpose of i32 lanes: vector (p, g) = pair p of lanes 4g..4g+3.
        c.get(R(0)).get(R(1)).shuffle32([0, 4, 1, 5]).set(T(0));
        c.get(R(2)).get(R(3)).shuffle32([0, 4, 1, 5]).set(T(1));
        c.get(R(0)).get(R(1)).shuffle32([2, 6, 3, 7]).set(T(2));
        c.get(R(2)).get(R(3)).shuffle32([2, 6, 3, 7]).set(T(3));
        const out = (p: number) => l.wgtPairBase + (p * groups + g) * 16;
        c.get(C.dst)
          .get(T(0))
          .get(T(1))
          .shuffle32([0, 1, 4, 5])
          .v128store(out(4 * h));
        c.get(C.dst)
          .get(T(0))
          .get(T(1))
          .shuffle32([2, 3, 6, 7])
          .v128store(out(4 * h + 1));
        c.get(C.dst)
          .get(T(2))
          .get(T(3))
          .shuffle32([0, 1, 4, 5])
          .v128store(out(4 * h + 2));
        c.get(C.dst)
          .get(T(2))
          .get(T(3))
          .shuffle32([2, 3, 6, 7])
          .v128store(out(4 * h + 3));
      }
    }
  });
  return { exportName: "pair_wgt", params: [I32, I32], locals: [I32, I32, I32, I32, ...Array(8).fill(V128)], body: c };
}
