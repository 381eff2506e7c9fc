/**
 * A small lowered-program form for VTA kernels, the shape of the TIR that
 * TVM's VTA passes produce (§8 of docs/vta-isa.md): loops, and coprocessor
 * scopes (queue 1 = load, 2 = compute, 3 = store) whose bodies call the
 * runtime. The compiler's templates build one of these; `runLowered`
 * plans the dependency tokens (coproc-sync.ts), replays it against the
 * runtime emulation (vta/runtime.ts) and returns the device runs.
 *
 * Virtual threads follow TVM's InjectVirtualThread as the tutorials show it:
 * loops are shared by the threads, and every leaf — a scope with the tokens
 * planned inside it, or a token operation planned around a loop — runs once
 * per thread, thread 0 first.
 */
import type { VtaCommandQueue } from "../../vta/index.ts";
import { planCoprocSync, type DepOp, type SyncPlan } from "./coproc-sync.ts";
import type { ExecContext, Stmt } from "./stmt.ts";

/**
 * What to do with token pops that TVM's lowering places after the final sync
 * (no virtual threads, a loop-carried store → compute token):
 *
 * * `"commit"` — run them before the sync: the epilogue carries them and each
 *   call leaves the token queues as it found them. A compiled function replays
 *   one stream on every call, so this is the safe default.
 * * `"carry"` — TVM's order: the sync first, the pops stay pending in the
 *   command queue. The stream is then exactly TVM's *first* call (the golden
 *   matrix_multiply_opt stream), which leaves a token behind; TVM's runtime
 *   consumes it in the next call's stream, a replayed stream cannot, so a
 *   board that keeps tokens across calls must not run it twice.
 */
export type TrailingPops = "commit" | "carry";

export interface LoweredRunOptions {
  /** Virtual threads (1 or 2): each leaf runs once per thread. */
  threads: number;
  trailingPops: TrailingPops;
}

/**
 * Plans the tokens, replays the program against `cmd`, and ends with the
 * final `coproc_sync` (VTASynchronize).
 *
 * Where that sync goes follows TVM: it is placed after the last top-level
 * statement, ahead of the token pops planned after that same statement — so
 * without virtual threads a trailing pop lands *after* the sync and stays
 * pending in the command queue (matrix_multiply_opt does this; see
 * TrailingPops). With virtual threads the whole body sits inside the thread
 * scope and the pops come first (convolution_opt).
 */
export function runLowered(root: Stmt, cmd: VtaCommandQueue, opts: LoweredRunOptions): SyncPlan {
  const plan = planCoprocSync(root);
  const threads = opts.threads;
  const loops: Record<string, number> = {};
  const dep = (d: DepOp) => (d.op === "push" ? cmd.depPush(d.from, d.to) : cmd.depPop(d.from, d.to));
  /** Tokens planned around a loop: each is a leaf of its own, run once per thread. */
  const loopDeps = (list: readonly DepOp[] | undefined) => {
    for (const d of list ?? []) for (let t = 0; t < threads; t++) dep(d);
  };
  const exec = (s: Stmt, afterHook?: () => void): void => {
    switch (s.kind) {
      case "seq":
        s.body.forEach((child, i) => exec(child, i === s.body.length - 1 ? afterHook : undefined));
        return;
      case "for":
        loopDeps(plan.before.get(s));
        for (let i = 0; i < s.extent; i++) {
          loops[s.name] = i;
          exec(s.body);
        }
        delete loops[s.name];
        afterHook?.();
        loopDeps(plan.after.get(s));
        return;
      case "scope":
        for (let t = 0; t < threads; t++) {
          const ctx: ExecContext = { cmd, loops: { ...loops }, thread: t, threads };
          plan.before.get(s)?.forEach(dep);
          s.body(ctx);
          plan.after.get(s)?.forEach(dep);
        }
        afterHook?.();
        return;
    }
  };
  if (threads > 1 || opts.trailingPops === "commit") {
    exec(root);
    cmd.synchronize();
  } else {
    exec(root, () => cmd.synchronize());
  }
  return plan;
}
