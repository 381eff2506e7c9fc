/**
 * Blocked matrix multiply on VTA, as TVM's "Simple Matrix Multiply" and
 * "Matrix Multiply Blocking" tutorials schedule it (§9.1–9.2 of
 * docs/vta-isa.md): `C = A · Wᵀ` with A `(batch, in)`, W `(out, in)`, int8 operands,
 * int32 accumulation, then the optional shift / clip epilogue and int8.
 *
 * ```
 * for b_out, oc_outer:                 (threads split oc_outer's tiles)
 *   [compute] reset the ACC tile
 *   for ic_out:
 *     [load]    LOAD INP tile, LOAD WGT tile
 *     [compute] GEMM: loops (b, oc) × uops (ic), as TVM's schedules order it
 *               (loops (oc, ic) × uops (b) where VerifyDep refuses that)
 *   [compute] epilogue ALU ops
 *   [store]   STORE the tile
 * ```
 *
 * Packed tensors: A `(batch/B, in/16, B, 16)`, W `(out/16, in/16, 16, 16)`,
 * C `(batch/B, out/16, B, 16)`.
 */
import { FarmError, type ParamSpec } from "../../protos/index.ts";
import { MEM, type VtaHardware } from "../../vta/index.ts";
import { divisible, divisorsDesc, firstFitting, fitsBuffer, oneOf, positiveInt } from "./checks.ts";
import { dma2d } from "./dma.ts";
import { checkEpilogue, type VtaEpilogue } from "./epilogue.ts";
import { epilogueScope, gemmScope, type GemmKernelSites } from "./gemm-scopes.ts";
import { loop, scope, seq, type ExecContext, type Stmt } from "./stmt.ts";
import { foldGemmNest, verifyDepViolation, type IndexLoop } from "./uop-nest.ts";

export interface VtaMatmulWorkload extends VtaEpilogue {
  /** Rows of A and C: a multiple of the hardware's BATCH. */
  batch: number;
  /** Columns of A and W: a multiple of BLOCK_IN. */
  inFeatures: number;
  /** Rows of W, columns of C: a multiple of BLOCK_OUT. */
  outFeatures: number;
}

export type MatmulStoreGranularity = "element" | "tile";

/** Blocks count VTA elements: `outBlock` 16 means 16 × BLOCK_OUT output features. */
export interface VtaMatmulSchedule {
  /** Batch blocks (of BATCH rows) per tile. */
  batchBlock: number;
  /** Input-feature blocks loaded per reduction step. */
  inBlock: number;
  /** Output-feature blocks per tile, per virtual thread. */
  outBlock: number;
  virtualThreads: 1 | 2;
  /** One STORE per output vector (matrix_multiply_opt) or one 2-D STORE per tile (matrix_multiply). */
  storeGranularity: MatmulStoreGranularity;
}

export interface ResolvedMatmul {
  workload: Required<Omit<VtaMatmulWorkload, "clip">> & { clip: readonly [number, number] | null };
  schedule: VtaMatmulSchedule;
  tile: {
    inp: number;
    wgt: number;
    acc: number;
    /** Loop order of the GEMM kernel (see GEMM_ORDERS). */
    gemmOrder: readonly Axis[];
  };
}

const BUFFER_A = 0;
const BUFFER_W = 1;
const BUFFER_C = 2;

type Workload = ResolvedMatmul["workload"];

function resolveWorkload(w: VtaMatmulWorkload, hw: VtaHardware): Workload {
  if (typeof w !== "object" || w === null) throw new FarmError("INVALID_ARGUMENT", "matmul workload must be an object");
  const r = {
    batch: positiveInt(w.batch, "matmul.batch"),
    inFeatures: positiveInt(w.inFeatures, "matmul.inFeatures"),
    outFeatures: positiveInt(w.outFeatures, "matmul.outFeatures"),
    shift: w.shift ?? 0,
    clip: w.clip ?? null,
  };
  checkEpilogue(r, "matmul");
  divisible("matmul batch", r.batch, hw.batch, "the hardware BATCH");
  divisible("matmul inFeatures", r.inFeatures, hw.blockIn, "BLOCK_IN");
  divisible("matmul outFeatures", r.outFeatures, hw.blockOut, "BLOCK_OUT");
  return r;
}

export function resolveMatmul(w: VtaMatmulWorkload, schedule: Partial<VtaMatmulSchedule> | undefined, hw: VtaHardware): ResolvedMatmul {
  const workload = resolveWorkload(w, hw);
  const s = schedule ?? {};
  const full =
    s.batchBlock !== undefined && s.inBlock !== undefined && s.outBlock !== undefined && s.virtualThreads !== undefined && s.storeGranularity !== undefined
      ? (s as VtaMatmulSchedule)
      : autoSchedule(workload, s, hw);
  return { workload, schedule: full, tile: checkSchedule(workload, full, hw) };
}

type Axis = "b" | "oc" | "ic";

/**
 * GEMM kernel loop orders, tried in turn. The first is TVM's (the tutorials
 * reorder the GEMM to `b_inn, oc_inn, ic_inn`): FoldUopLoop makes batch and
 * output channels the instruction's loops and the input blocks its uops, which
 * then all write one accumulator, so VerifyDep refuses it when batch, output
 * and input blocks are all > 1; the second (uops over the batch) serves that.
 */
const GEMM_ORDERS: readonly (readonly Axis[])[] = [
  ["b", "oc", "ic"],
  ["oc", "ic", "b"],
];

function gemmNest(s: VtaMatmulSchedule, order: readonly Axis[]): IndexLoop[] {
  const loops: Record<Axis, IndexLoop> = {
    b: { extent: s.batchBlock, dst: s.outBlock, src: s.inBlock, wgt: 0 },
    oc: { extent: s.outBlock, dst: 1, src: 0, wgt: s.inBlock },
    ic: { extent: s.inBlock, dst: 0, src: 1, wgt: 1 },
  };
  return order.map((a) => loops[a]);
}

function accNest(s: VtaMatmulSchedule): IndexLoop[] {
  return [
    { extent: s.batchBlock, dst: s.outBlock, src: s.outBlock, wgt: 0 },
    { extent: s.outBlock, dst: 1, src: 1, wgt: 0 },
  ];
}

function checkSchedule(w: Workload, s: VtaMatmulSchedule, hw: VtaHardware): ResolvedMatmul["tile"] {
  positiveInt(s.batchBlock, "matmul schedule.batchBlock");
  positiveInt(s.inBlock, "matmul schedule.inBlock");
  positiveInt(s.outBlock, "matmul schedule.outBlock");
  oneOf(s.virtualThreads, [1, 2] as const, "matmul schedule.virtualThreads");
  oneOf(s.storeGranularity, ["element", "tile"] as const, "matmul schedule.storeGranularity");
  const vt = s.virtualThreads;
  divisible("matmul batch blocks", w.batch / hw.batch, s.batchBlock, "batchBlock");
  divisible("matmul input-feature blocks", w.inFeatures / hw.blockIn, s.inBlock, "inBlock");
  divisible("matmul output-feature blocks", w.outFeatures / hw.blockOut, s.outBlock * vt, `outBlock × virtualThreads = ${s.outBlock} × ${vt}`);
  const tile = { inp: s.batchBlock * s.inBlock, wgt: s.outBlock * s.inBlock, acc: s.batchBlock * s.outBlock };
  const per = vt > 1 ? `${vt} threads × ` : "";
  fitsBuffer(hw, "INP", vt * tile.inp, `the input tile (${per}${s.batchBlock} batch × ${s.inBlock} feature blocks)`);
  fitsBuffer(hw, "WGT", vt * tile.wgt, `the weight tile (${per}${s.outBlock} × ${s.inBlock} blocks)`);
  fitsBuffer(hw, "ACC", vt * tile.acc, `the accumulator tile (${per}${s.batchBlock} batch × ${s.outBlock} feature blocks)`);
  const kernels = GEMM_ORDERS.map((order) => ({ order, kernel: foldGemmNest(gemmNest(s, order), { dst: 0, src: 0, wgt: 0 }) }));
  const fits = kernels.find(({ kernel }) => kernel.uops.length <= hw.uopDepth && verifyDepViolation(kernel.uops) === undefined);
  if (fits) return { ...tile, gemmOrder: fits.order };
  const { kernel } = kernels[kernels.length - 1]!;
  fitsBuffer(hw, "UOP", kernel.uops.length, "the GEMM micro-op kernel");
  throw new FarmError(
    "COMPILE_ERROR",
    `matmul schedule: GEMM uop ${verifyDepViolation(kernel.uops)} repeats an accumulator of the two uops before it (the runtime's VerifyDep)`,
  );
}

function autoSchedule(w: Workload, given: Partial<VtaMatmulSchedule>, hw: VtaHardware): VtaMatmulSchedule {
  const nb = w.batch / hw.batch;
  const ib = w.inFeatures / hw.blockIn;
  const ob = w.outFeatures / hw.blockOut;
  const candidates: { s: VtaMatmulSchedule; cost: number; size: number }[] = [];
  for (const vt of given.virtualThreads ? [given.virtualThreads] : ([1] as const)) {
    if (ob % vt !== 0) continue;
    for (const outBlock of given.outBlock ? [given.outBlock] : divisorsDesc(ob / vt)) {
      for (const batchBlock of given.batchBlock ? [given.batchBlock] : divisorsDesc(nb)) {
        for (const inBlock of given.inBlock ? [given.inBlock] : divisorsDesc(ib)) {
          if (vt * batchBlock * inBlock > hw.inpDepth || vt * outBlock * inBlock > hw.wgtDepth || vt * batchBlock * outBlock > hw.accDepth) continue;
          const tiles = (nb / batchBlock) * (ob / outBlock);
          const cost = tiles * ib * (batchBlock * hw.inpElemBytes + outBlock * hw.wgtElemBytes);
          candidates.push({
            s: { batchBlock, inBlock, outBlock, virtualThreads: vt, storeGranularity: given.storeGranularity ?? "tile" },
            cost,
            size: inBlock,
          });
        }
      }
    }
  }
  candidates.sort((a, b) => a.cost - b.cost || b.size - a.size);
  return firstFitting(
    candidates.map((c) => c.s),
    (s) => checkSchedule(w, s, hw),
    () => new FarmError("COMPILE_ERROR", `matmul: no schedule with the given knobs ${JSON.stringify(given)} fits the VTA buffers`),
  );
}

export function matmulParams(r: ResolvedMatmul, hw: VtaHardware): ParamSpec[] {
  const w = r.workload;
  const nb = w.batch / hw.batch;
  return [
    { name: "A", kind: "buffer", dtype: "int8", shape: [nb, w.inFeatures / hw.blockIn, hw.batch, hw.blockIn] },
    { name: "W", kind: "buffer", dtype: "int8", shape: [w.outFeatures / hw.blockOut, w.inFeatures / hw.blockIn, hw.blockOut, hw.blockIn] },
    { name: "C", kind: "buffer", dtype: "int8", shape: [nb, w.outFeatures / hw.blockOut, hw.batch, hw.blockOut] },
  ];
}

export function lowerMatmul(r: ResolvedMatmul, hw: VtaHardware): Stmt {
  const w = r.workload;
  const s = r.schedule;
  const t = r.tile;
  const vt = s.virtualThreads;
  const ib = w.inFeatures / hw.blockIn;
  const ob = w.outFeatures / hw.blockOut;
  const base = (ctx: ExecContext) => ({ acc: ctx.thread * t.acc, inp: ctx.thread * t.inp, wgt: ctx.thread * t.wgt });
  const tileAt = (ctx: ExecContext) => ({ b0: (ctx.loops.b ?? 0) * s.batchBlock, oc0: ((ctx.loops.oc ?? 0) * vt + ctx.thread) * s.outBlock });

  const sites: GemmKernelSites = { kernel: "matmul", base, signature: (ctx) => (vt > 1 ? ctx.thread : undefined) };
  const reset = gemmScope(sites, "reset", accNest(s));

  const load = scope(1, "load", (ctx) => {
    const { cmd } = ctx;
    const { b0, oc0 } = tileAt(ctx);
    const ic0 = (ctx.loops.ic ?? 0) * s.inBlock;
    const a = dma2d(
      [
        { extent: s.batchBlock, stride: ib },
        { extent: s.inBlock, stride: 1 },
      ],
      "matmul input load",
    );
    cmd.loadBuffer2D(BUFFER_A, b0 * ib + ic0, a.xSize, a.ySize, a.xStride, 0, 0, 0, 0, base(ctx).inp, MEM.INP);
    const d = dma2d(
      [
        { extent: s.outBlock, stride: ib },
        { extent: s.inBlock, stride: 1 },
      ],
      "matmul weight load",
    );
    cmd.loadBuffer2D(BUFFER_W, oc0 * ib + ic0, d.xSize, d.ySize, d.xStride, 0, 0, 0, 0, base(ctx).wgt, MEM.WGT);
  });

  const gemm = gemmScope(sites, "gemm", gemmNest(s, t.gemmOrder));
  const alu = epilogueScope(sites, w, accNest(s));

  const store = scope(3, "store", (ctx) => {
    const { cmd } = ctx;
    const { b0, oc0 } = tileAt(ctx);
    const acc = base(ctx).acc;
    if (s.storeGranularity === "tile") {
      const d = dma2d(
        [
          { extent: s.batchBlock, stride: ob },
          { extent: s.outBlock, stride: 1 },
        ],
        "matmul store",
      );
      cmd.storeBuffer2D(acc, MEM.OUT, BUFFER_C, b0 * ob + oc0, d.xSize, d.ySize, d.xStride);
      return;
    }
    for (let b = 0; b < s.batchBlock; b++) {
      for (let oc = 0; oc < s.outBlock; oc++) cmd.storeBuffer2D(acc + b * s.outBlock + oc, MEM.OUT, BUFFER_C, (b0 + b) * ob + oc0 + oc, 1, 1, 1);
    }
  });

  const body = seq(reset, loop("ic", ib / s.inBlock, seq(load, gemm)), alu, store);
  return loop("b", w.batch / hw.batch / s.batchBlock, loop("oc", ob / (s.outBlock * vt), body));
}
