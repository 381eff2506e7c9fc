/**
 * 2-D convolution on VTA in the packed NCHWnc layout, scheduled as in TVM's
 * "2D Convolution Optimization" tutorial (§9.3 of docs/vta-isa.md):
 *
 * ```
 * for b, oc_outer, y_out, x_out:                (threads split oc_outer's tiles)
 *   [compute] reset the ACC tile                (GEMM reset kernel)
 *   for ic_out:
 *     [load]    LOAD INP tile (padding by DMA), LOAD WGT tile
 *     [compute] GEMM kernel over (oc, y) loops × (ic, dy, dx, x) uops
 *   [compute] SHR, MAX, MIN                     (the epilogue, if any)
 *   [store]   STORE the tile
 * ```
 *
 * Tensors (BATCH = B, BLOCK_IN = BLOCK_OUT = 16 by default):
 * data `(N/B, C/16, H, W, B, 16)`, kernel `(O/16, C/16, KH, KW, 16, 16)`,
 * output `(N/B, O/16, OH, OW, B, 16)`, all int8.
 */
import { FarmError, type ParamSpec } from "../../protos/index.ts";
import { MEM, type VtaHardware } from "../../vta/index.ts";
import { divisible, divisorsDesc, firstFitting, fitsBuffer, nonNegativeInt, oneOf, positiveInt } from "./checks.ts";
import { dma2d, fold2d, type DmaDim } from "./dma.ts";
import { checkEpilogue, type VtaEpilogue } from "./epilogue.ts";
import { epilogueScope, gemmScope, type GemmKernelSites } from "./gemm-scopes.ts";
import { loop, scope, seq, type ExecContext, type Stmt } from "./stmt.ts";
import { foldGemmNest, verifyDepViolation, type IndexLoop } from "./uop-nest.ts";

export interface VtaConv2dWorkload extends VtaEpilogue {
  /** N, a multiple of the hardware's BATCH. */
  batch: number;
  /** C, a multiple of BLOCK_IN. */
  inChannels: number;
  /** O, a multiple of BLOCK_OUT. */
  outChannels: number;
  height: number;
  width: number;
  kernelH: number;
  kernelW: number;
  /** Zero padding on each side (inserted by the load DMA, 0–15 per tile edge); default 0. */
  padH?: number;
  padW?: number;
  /** Default 1. */
  strideH?: number;
  strideW?: number;
}

/** Output height and width of a conv2d workload. */
export function conv2dOutputSize(w: VtaConv2dWorkload): { outHeight: number; outWidth: number } {
  const sh = w.strideH ?? 1;
  const sw = w.strideW ?? 1;
  return {
    outHeight: Math.floor((w.height + 2 * (w.padH ?? 0) - w.kernelH) / sh) + 1,
    outWidth: Math.floor((w.width + 2 * (w.padW ?? 0) - w.kernelW) / sw) + 1,
  };
}

export type Conv2dStoreGranularity = "element" | "row" | "channel";

/** The tutorial's knobs. Blocks count VTA elements: `ocBlock` 8 means 8 × BLOCK_OUT channels. */
export interface VtaConv2dSchedule {
  /** Output-channel blocks per tile, per virtual thread. */
  ocBlock: number;
  /** Input-channel blocks loaded per step of the reduction. */
  icBlock: number;
  /** Output rows per tile. */
  hBlock: number;
  /** Output columns per tile. */
  wBlock: number;
  /** 1 or 2 virtual threads; with 2, the threads take alternate output-channel tiles and their loads overlap the other's compute. */
  virtualThreads: 1 | 2;
  /** One STORE per output vector (the tutorial), per output row, or per output-channel plane of the tile. */
  storeGranularity: Conv2dStoreGranularity;
}

/** A workload with its defaults applied, its derived sizes, and a schedule that fits. */
export interface ResolvedConv2d {
  workload: Required<Omit<VtaConv2dWorkload, "clip">> & { clip: readonly [number, number] | null };
  schedule: VtaConv2dSchedule;
  outHeight: number;
  outWidth: number;
  /** Tile sizes per thread, in elements of each buffer. */
  tile: {
    inpH: number;
    inpW: number;
    inp: number;
    wgt: number;
    acc: number;
    /** Loop order of the GEMM kernel (see GEMM_ORDERS). */ gemmOrder: readonly Axis[];
  };
}

const BUFFER_DATA = 0;
const BUFFER_KERNEL = 1;
const BUFFER_OUT = 2;

function resolveWorkload(w: VtaConv2dWorkload, hw: VtaHardware): ResolvedConv2d["workload"] & { outHeight: number; outWidth: number } {
  if (typeof w !== "object" || w === null) throw new FarmError("INVALID_ARGUMENT", "conv2d workload must be an object");
  const r = {
    batch: positiveInt(w.batch, "conv2d.batch"),
    inChannels: positiveInt(w.inChannels, "conv2d.inChannels"),
    outChannels: positiveInt(w.outChannels, "conv2d.outChannels"),
    height: positiveInt(w.height, "conv2d.height"),
    width: positiveInt(w.width, "conv2d.width"),
    kernelH: positiveInt(w.kernelH, "conv2d.kernelH"),
    kernelW: positiveInt(w.kernelW, "conv2d.kernelW"),
    padH: nonNegativeInt(w.padH ?? 0, "conv2d.padH"),
    padW: nonNegativeInt(w.padW ?? 0, "conv2d.padW"),
    strideH: positiveInt(w.strideH ?? 1, "conv2d.strideH"),
    strideW: positiveInt(w.strideW ?? 1, "conv2d.strideW"),
    shift: w.shift ?? 0,
    clip: w.clip ?? null,
  };
  checkEpilogue(r, "conv2d");
  divisible("conv2d batch", r.batch, hw.batch, "the hardware BATCH");
  divisible("conv2d inChannels", r.inChannels, hw.blockIn, "BLOCK_IN");
  divisible("conv2d outChannels", r.outChannels, hw.blockOut, "BLOCK_OUT");
  const { outHeight, outWidth } = conv2dOutputSize(r);
  if (outHeight < 1 || outWidth < 1) {
    throw new FarmError(
      "INVALID_ARGUMENT",
      `conv2d: a ${r.kernelH}×${r.kernelW} kernel does not fit the ${r.height}×${r.width} input padded by ${r.padH}×${r.padW}`,
    );
  }
  return { ...r, outHeight, outWidth };
}

/** Applies defaults, checks every limit; throws COMPILE_ERROR naming what does not fit. */
export function resolveConv2d(w: VtaConv2dWorkload, schedule: Partial<VtaConv2dSchedule> | undefined, hw: VtaHardware): ResolvedConv2d {
  const rw = resolveWorkload(w, hw);
  const { outHeight, outWidth, ...workload } = rw;
  const full = isComplete(schedule) ? schedule : autoSchedule(rw, schedule ?? {}, hw);
  const checked = checkSchedule(rw, full, hw);
  return { workload, schedule: full, outHeight, outWidth, tile: checked };
}

function isComplete(s: Partial<VtaConv2dSchedule> | undefined): s is VtaConv2dSchedule {
  return (
    !!s &&
    s.ocBlock !== undefined &&
    s.icBlock !== undefined &&
    s.hBlock !== undefined &&
    s.wBlock !== undefined &&
    s.virtualThreads !== undefined &&
    s.storeGranularity !== undefined
  );
}

type Workload = ReturnType<typeof resolveWorkload>;

function checkSchedule(w: Workload, s: VtaConv2dSchedule, hw: VtaHardware): ResolvedConv2d["tile"] {
  positiveInt(s.ocBlock, "conv2d schedule.ocBlock");
  positiveInt(s.icBlock, "conv2d schedule.icBlock");
  positiveInt(s.hBlock, "conv2d schedule.hBlock");
  positiveInt(s.wBlock, "conv2d schedule.wBlock");
  oneOf(s.virtualThreads, [1, 2] as const, "conv2d schedule.virtualThreads");
  oneOf(s.storeGranularity, ["element", "row", "channel"] as const, "conv2d schedule.storeGranularity");
  const Ob = w.outChannels / hw.blockOut;
  const Cb = w.inChannels / hw.blockIn;
  const vt = s.virtualThreads;
  divisible("conv2d output-channel blocks", Ob, s.ocBlock * vt, `ocBlock × virtualThreads = ${s.ocBlock} × ${vt}`);
  divisible("conv2d input-channel blocks", Cb, s.icBlock, "icBlock");
  divisible("conv2d output height", w.outHeight, s.hBlock, "hBlock");
  divisible("conv2d output width", w.outWidth, s.wBlock, "wBlock");
  const inpH = (s.hBlock - 1) * w.strideH + w.kernelH;
  const inpW = (s.wBlock - 1) * w.strideW + w.kernelW;
  const tile = {
    inpH,
    inpW,
    inp: s.icBlock * inpH * inpW,
    wgt: s.ocBlock * s.icBlock * w.kernelH * w.kernelW,
    acc: s.ocBlock * s.hBlock * s.wBlock,
  };
  const per = vt > 1 ? `${vt} threads × ` : "";
  fitsBuffer(hw, "INP", vt * tile.inp, `the input tile (${per}${s.icBlock} channel blocks × ${inpH} rows × ${inpW} columns, padding included)`);
  fitsBuffer(hw, "WGT", vt * tile.wgt, `the weight tile (${per}${s.ocBlock} × ${s.icBlock} channel blocks × ${w.kernelH}×${w.kernelW})`);
  fitsBuffer(hw, "ACC", vt * tile.acc, `the accumulator tile (${per}${s.ocBlock} channel blocks × ${s.hBlock} rows × ${s.wBlock} columns)`);
  const order = GEMM_ORDERS.find((o) => {
    const k = foldGemmNest(gemmNest(w, s, tile, o), { dst: 0, src: 0, wgt: 0 });
    return k.uops.length <= hw.uopDepth && verifyDepViolation(k.uops) === undefined;
  });
  if (!order) {
    const k = foldGemmNest(gemmNest(w, s, tile, GEMM_ORDERS[0]!), { dst: 0, src: 0, wgt: 0 });
    fitsBuffer(hw, "UOP", k.uops.length, `the GEMM micro-op kernel (${s.icBlock} × ${w.kernelH} × ${w.kernelW} × ${s.wBlock} uops after folding two loops)`);
    throw new FarmError(
      "COMPILE_ERROR",
      `conv2d schedule: every GEMM uop order writes an accumulator that one of the two uops before it writes (the runtime's VerifyDep): ` +
        `a tile needs at least 3 output vectors along its width, its channels or its rows (got wBlock ${s.wBlock}, ocBlock ${s.ocBlock}, hBlock ${s.hBlock})`,
    );
  }
  // Padding goes in 4-bit DMA fields, and a tile must touch real data.
  for (let yo = 0; yo < w.outHeight / s.hBlock; yo++) {
    const r0 = yo * s.hBlock * w.strideH - w.padH;
    const [p0, p1, n] = edgePads(r0, inpH, w.height);
    if (p0 > 15 || p1 > 15)
      throw new FarmError("COMPILE_ERROR", `conv2d: output row tile ${yo} needs ${Math.max(p0, p1)} rows of padding; a VTA load pads at most 15`);
    if (n <= 0) throw new FarmError("COMPILE_ERROR", `conv2d: output row tile ${yo} reads only padding; reduce padH`);
  }
  for (let xo = 0; xo < w.outWidth / s.wBlock; xo++) {
    const c0 = xo * s.wBlock * w.strideW - w.padW;
    const [p0, p1, n] = edgePads(c0, inpW, w.width);
    if (p0 > 15 || p1 > 15)
      throw new FarmError("COMPILE_ERROR", `conv2d: output column tile ${xo} needs ${Math.max(p0, p1)} columns of padding; a VTA load pads at most 15`);
    if (n <= 0) throw new FarmError("COMPILE_ERROR", `conv2d: output column tile ${xo} reads only padding; reduce padW`);
  }
  return { ...tile, gemmOrder: order };
}

/** [pad before, pad after, real count] of a window of `size` starting at `start` over [0, extent). */
function edgePads(start: number, size: number, extent: number): [number, number, number] {
  const p0 = Math.max(0, -start);
  const p1 = Math.max(0, start + size - extent);
  return [p0, p1, size - p0 - p1];
}

type Axis = "oc" | "y" | "ic" | "dy" | "dx" | "x";

/**
 * GEMM kernel loop orders, tried in turn. FoldUopLoop makes the two outermost
 * loops (of extent > 1) the instruction's loops and expands the rest into
 * uops, so the innermost axes decide whether consecutive uops write different
 * accumulators (VerifyDep). The first is the tutorial's (x innermost); the
 * others serve tiles too narrow for it.
 */
const GEMM_ORDERS: readonly (readonly Axis[])[] = [
  ["oc", "y", "ic", "dy", "dx", "x"],
  ["y", "x", "ic", "dy", "dx", "oc"],
  ["oc", "x", "ic", "dy", "dx", "y"],
  ["y", "ic", "dy", "dx", "oc", "x"],
  ["x", "ic", "dy", "dx", "oc", "y"],
  ["oc", "ic", "dy", "dx", "y", "x"],
  ["ic", "dy", "dx", "oc", "y", "x"],
];

function gemmNest(w: ResolvedConv2d["workload"], s: VtaConv2dSchedule, tile: { inpH: number; inpW: number }, order: readonly Axis[]): IndexLoop[] {
  const kk = w.kernelH * w.kernelW;
  const loops: Record<Axis, IndexLoop> = {
    oc: { extent: s.ocBlock, dst: s.hBlock * s.wBlock, src: 0, wgt: s.icBlock * kk },
    y: { extent: s.hBlock, dst: s.wBlock, src: w.strideH * tile.inpW, wgt: 0 },
    ic: { extent: s.icBlock, dst: 0, src: tile.inpH * tile.inpW, wgt: kk },
    dy: { extent: w.kernelH, dst: 0, src: tile.inpW, wgt: w.kernelW },
    dx: { extent: w.kernelW, dst: 0, src: 1, wgt: 1 },
    x: { extent: s.wBlock, dst: 1, src: w.strideW, wgt: 0 },
  };
  return order.map((a) => loops[a]);
}

/** The ACC tile, oc × rows × columns, dense. */
function accNest(s: VtaConv2dSchedule): IndexLoop[] {
  return [
    { extent: s.ocBlock, dst: s.hBlock * s.wBlock, src: s.hBlock * s.wBlock, wgt: 0 },
    { extent: s.hBlock, dst: s.wBlock, src: s.wBlock, wgt: 0 },
    { extent: s.wBlock, dst: 1, src: 1, wgt: 0 },
  ];
}

/**
 * A schedule for the knobs left open: among those that fit, the one that
 * moves the fewest bytes from DRAM, preferring 2 virtual threads, then the
 * largest accumulator tile.
 */
function autoSchedule(w: Workload, given: Partial<VtaConv2dSchedule>, hw: VtaHardware): VtaConv2dSchedule {
  const Ob = w.outChannels / hw.blockOut;
  const Cb = w.inChannels / hw.blockIn;
  const candidates: { s: VtaConv2dSchedule; cost: number; acc: number }[] = [];
  for (const vt of given.virtualThreads ? [given.virtualThreads] : ([2, 1] as const)) {
    if (Ob % vt !== 0) continue;
    for (const ocBlock of given.ocBlock ? [given.ocBlock] : divisorsDesc(Ob / vt)) {
      for (const icBlock of given.icBlock ? [given.icBlock] : [1]) {
        for (const hBlock of given.hBlock ? [given.hBlock] : divisorsDesc(w.outHeight)) {
          for (const wBlock of given.wBlock ? [given.wBlock] : divisorsDesc(w.outWidth)) {
            const inpH = (hBlock - 1) * w.strideH + w.kernelH;
            const inpW = (wBlock - 1) * w.strideW + w.kernelW;
            if (vt * icBlock * inpH * inpW > hw.inpDepth) continue;
            if (vt * ocBlock * icBlock * w.kernelH * w.kernelW > hw.wgtDepth) continue;
            const acc = ocBlock * hBlock * wBlock;
            if (vt * acc > hw.accDepth) continue;
            const tiles = (w.batch / hw.batch) * (Ob / ocBlock) * (w.outHeight / hBlock) * (w.outWidth / wBlock);
            const cost = tiles * (Cb * inpH * inpW * hw.inpElemBytes + ocBlock * Cb * w.kernelH * w.kernelW * hw.wgtElemBytes);
            const s: VtaConv2dSchedule = { ocBlock, icBlock, hBlock, wBlock, virtualThreads: vt, storeGranularity: given.storeGranularity ?? "channel" };
            candidates.push({ s, cost: cost + (vt === 2 ? 0 : Number.MAX_SAFE_INTEGER / 4), acc });
          }
        }
      }
    }
  }
  candidates.sort((a, b) => a.cost - b.cost || b.acc - a.acc || b.s.wBlock - a.s.wBlock || b.s.ocBlock - a.s.ocBlock);
  return firstFitting(
    candidates.map((c) => c.s),
    (s) => checkSchedule(w, s, hw),
    () =>
      new FarmError(
        "COMPILE_ERROR",
        `conv2d: no schedule with the given knobs ${JSON.stringify(given)} fits the VTA buffers (INP ${hw.inpDepth}, WGT ${hw.wgtDepth}, ACC ${hw.accDepth} elements)`,
      ),
  );
}

export function conv2dParams(r: ResolvedConv2d, hw: VtaHardware): ParamSpec[] {
  const w = r.workload;
  const nb = w.batch / hw.batch;
  return [
    { name: "data", kind: "buffer", dtype: "int8", shape: [nb, w.inChannels / hw.blockIn, w.height, w.width, hw.batch, hw.blockIn] },
    {
      name: "kernel",
      kind: "buffer",
      dtype: "int8",
      shape: [w.outChannels / hw.blockOut, w.inChannels / hw.blockIn, w.kernelH, w.kernelW, hw.blockOut, hw.blockIn],
    },
    { name: "res", kind: "buffer", dtype: "int8", shape: [nb, w.outChannels / hw.blockOut, r.outHeight, r.outWidth, hw.batch, hw.blockOut] },
  ];
}

/** The lowered program of a resolved conv2d. */
export function lowerConv2d(r: ResolvedConv2d, hw: VtaHardware): Stmt {
  const w = r.workload;
  const s = r.schedule;
  const t = r.tile;
  const vt = s.virtualThreads;
  const H = w.height;
  const W = w.width;
  const OH = r.outHeight;
  const OW = r.outWidth;
  const Cb = w.inChannels / hw.blockIn;
  const Ob = w.outChannels / hw.blockOut;
  const kk = w.kernelH * w.kernelW;
  const base = (ctx: ExecContext) => ({ acc: ctx.thread * t.acc, inp: ctx.thread * t.inp, wgt: ctx.thread * t.wgt });
  const tileAt = (ctx: ExecContext) => ({
    b: ctx.loops.b ?? 0,
    ocTile: (ctx.loops.oc ?? 0) * vt + ctx.thread,
    y0: (ctx.loops.y ?? 0) * s.hBlock,
    x0: (ctx.loops.x ?? 0) * s.wBlock,
  });

  const sites: GemmKernelSites = { kernel: "conv2d", base, signature: (ctx) => (vt > 1 ? ctx.thread : undefined) };
  const reset = gemmScope(sites, "reset", gemmNest(w, s, t, ["oc", "y", "x"]));

  // TVM folds an input copy's contiguous dimensions only when it has no padding: a workload with any
  // padding reads through pad's if_then_else, which makes every tile's copy a padded one, y and x as they are.
  const inputRegion = (blocks: number): DmaDim[] => [
    { extent: blocks, stride: H * W },
    { extent: t.inpH, stride: W },
    { extent: t.inpW, stride: 1 },
  ];
  const unpadded = w.padH === 0 && w.padW === 0;
  const wholeTile = unpadded ? fold2d(inputRegion(s.icBlock)) : undefined;
  // A tile whose channel blocks make no 2-D pattern (TVM refuses it), or whose folded stride overflows
  // the 16-bit field, loads one channel block at a time.
  const tileLoad = wholeTile && wholeTile.xStride < 2 ** 16 ? wholeTile : undefined;
  const blockLoad = unpadded ? fold2d(inputRegion(1))! : undefined;

  const load = scope(1, "load", (ctx) => {
    const { cmd } = ctx;
    const { b, ocTile, y0, x0 } = tileAt(ctx);
    const ico = ctx.loops.ic ?? 0;
    const r0 = y0 * w.strideH - w.padH;
    const c0 = x0 * w.strideW - w.padW;
    const [yp0, yp1, ys] = edgePads(r0, t.inpH, H);
    const [xp0, xp1, xs] = edgePads(c0, t.inpW, W);
    const blockOffset = (ici: number) => ((b * Cb + ico * s.icBlock + ici) * H + r0 + yp0) * W + c0 + xp0;
    if (tileLoad) {
      cmd.loadBuffer2D(BUFFER_DATA, blockOffset(0), tileLoad.xSize, tileLoad.ySize, tileLoad.xStride, 0, 0, 0, 0, base(ctx).inp, MEM.INP);
    } else {
      for (let ici = 0; ici < s.icBlock; ici++) {
        const sram = base(ctx).inp + ici * t.inpH * t.inpW;
        if (blockLoad) cmd.loadBuffer2D(BUFFER_DATA, blockOffset(ici), blockLoad.xSize, blockLoad.ySize, blockLoad.xStride, 0, 0, 0, 0, sram, MEM.INP);
        else cmd.loadBuffer2D(BUFFER_DATA, blockOffset(ici), xs, ys, W, xp0, yp0, xp1, yp1, sram, MEM.INP);
      }
    }
    const wOff = (ocTile * s.ocBlock * Cb + ico * s.icBlock) * kk;
    const d = dma2d(
      [
        { extent: s.ocBlock, stride: Cb * kk },
        { extent: s.icBlock * kk, stride: 1 },
      ],
      "conv2d weight load",
    );
    cmd.loadBuffer2D(BUFFER_KERNEL, wOff, d.xSize, d.ySize, d.xStride, 0, 0, 0, 0, base(ctx).wgt, MEM.WGT);
  });

  const gemm = gemmScope(sites, "gemm", gemmNest(w, s, t, t.gemmOrder));
  const alu = epilogueScope(sites, w, accNest(s));

  const store = scope(3, "store", (ctx) => {
    const { cmd } = ctx;
    const { b, ocTile, y0, x0 } = tileAt(ctx);
    const acc = base(ctx).acc;
    const outOff = (oc: number, r: number, c: number) => ((b * Ob + ocTile * s.ocBlock + oc) * OH + y0 + r) * OW + x0 + c;
    const sram = (oc: number, r: number, c: number) => acc + (oc * s.hBlock + r) * s.wBlock + c;
    for (let oc = 0; oc < s.ocBlock; oc++) {
      if (s.storeGranularity === "channel") {
        const d = dma2d(
          [
            { extent: s.hBlock, stride: OW },
            { extent: s.wBlock, stride: 1 },
          ],
          "conv2d store",
        );
        cmd.storeBuffer2D(sram(oc, 0, 0), MEM.OUT, BUFFER_OUT, outOff(oc, 0, 0), d.xSize, d.ySize, d.xStride);
        continue;
      }
      for (let r = 0; r < s.hBlock; r++) {
        if (s.storeGranularity === "row") {
          cmd.storeBuffer2D(sram(oc, r, 0), MEM.OUT, BUFFER_OUT, outOff(oc, r, 0), s.wBlock, 1, s.wBlock);
          continue;
        }
        for (let c = 0; c < s.wBlock; c++) cmd.storeBuffer2D(sram(oc, r, c), MEM.OUT, BUFFER_OUT, outOff(oc, r, c), 1, 1, 1);
      }
    }
  });

  const body = seq(reset, loop("ic", Cb / s.icBlock, seq(load, gemm)), alu, store);
  return loop("b", w.batch / hw.batch, loop("oc", Ob / (s.ocBlock * vt), loop("y", OH / s.hBlock, loop("x", OW / s.wBlock, body))));
}
