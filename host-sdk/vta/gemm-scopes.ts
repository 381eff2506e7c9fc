/**
 * The compute scopes that the GEMM templates (conv2d, matmul) share: a GEMM
 * kernel over a thread's tiles (reset or accumulate), and the ALU epilogue
 * over its accumulator tile. Every scope is one uop call site (one
 * UopHandle); with virtual threads each thread records its own kernel, the
 * thread being the kernel's signature, as TVM's lowering does.
 */
import { UopHandle } from "../../vta/index.ts";
import { epilogueSteps, type VtaEpilogue } from "./epilogue.ts";
import { scope, type ExecContext, type ScopeStmt } from "./stmt.ts";
import { aluLoops, foldGemmNest, recordAlu, recordGemm, type IndexLoop } from "./uop-nest.ts";

/** Where a thread's tiles start in the on-chip buffers. */
export interface ThreadTiles {
  acc: number;
  inp: number;
  wgt: number;
}

export interface GemmKernelSites {
  /** Prefix of the call sites' names, e.g. "conv2d". */
  kernel: string;
  /** The running thread's tiles. */
  base(ctx: ExecContext): ThreadTiles;
  /** The uop kernel signature: the thread with virtual threads, none without. */
  signature(ctx: ExecContext): number | undefined;
}

/** A compute scope pushing one GEMM kernel over `nest`; a reset kernel only addresses the accumulators. */
export function gemmScope(k: GemmKernelSites, label: "reset" | "gemm", nest: readonly IndexLoop[]): ScopeStmt {
  const site = new UopHandle(`${k.kernel}.${label}`);
  const reset = label === "reset";
  return scope(2, label, (ctx) => {
    const { cmd } = ctx;
    const b = k.base(ctx);
    const first = reset ? { dst: b.acc, src: 0, wgt: 0 } : { dst: b.acc, src: b.inp, wgt: b.wgt };
    cmd.pushGemmOp(site, () => recordGemm(cmd, foldGemmNest(nest, first), reset), k.signature(ctx));
  });
}

/** The epilogue's ALU kernels (>> shift, clip) over the accumulator tile `accNest`, one call site each; undefined when there are none. */
export function epilogueScope(k: GemmKernelSites, e: VtaEpilogue, accNest: readonly IndexLoop[]): ScopeStmt | undefined {
  const steps = epilogueSteps(e);
  if (steps.length === 0) return undefined;
  const sites = steps.map((st) => new UopHandle(`${k.kernel}.${st.label}`));
  const loops = aluLoops(accNest, `${k.kernel} epilogue`);
  return scope(2, "alu", (ctx) => {
    const { cmd } = ctx;
    const acc = k.base(ctx).acc;
    steps.forEach((st, i) => cmd.pushAluOp(sites[i]!, () => recordAlu(cmd, loops, acc, st.opcode, { imm: st.imm }), k.signature(ctx)));
  });
}
