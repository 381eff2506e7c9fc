/**
 * The statements of a lowered VTA program (lowered.ts): coprocessor scopes,
 * loops and sequences, and their constructors. The templates build them,
 * coproc-sync.ts plans their tokens and lowered.ts runs them.
 */
import type { QueueId, VtaCommandQueue } from "../../vta/index.ts";

export interface ExecContext {
  readonly cmd: VtaCommandQueue;
  /** Current value of every enclosing loop, by name (a loop of extent 1 is 0). */
  readonly loops: Readonly<Record<string, number>>;
  /** Virtual thread running this leaf, 0-based. */
  readonly thread: number;
  readonly threads: number;
}

export interface ScopeStmt {
  kind: "scope";
  queue: QueueId;
  /** What the scope does, for dumps. */
  label: string;
  body: (ctx: ExecContext) => void;
}

export interface ForStmt {
  kind: "for";
  name: string;
  extent: number;
  body: Stmt;
}

export interface SeqStmt {
  kind: "seq";
  body: Stmt[];
}

export type Stmt = ScopeStmt | ForStmt | SeqStmt;

export function scope(queue: QueueId, label: string, body: (ctx: ExecContext) => void): ScopeStmt {
  return { kind: "scope", queue, label, body };
}

/**
 * A loop. TVM's simplifier removes loops of extent 1 before the VTA passes
 * run, which changes where tokens go, so they are not built at all here.
 */
export function loop(name: string, extent: number, body: Stmt): Stmt {
  return extent === 1 ? body : { kind: "for", name, extent, body };
}

/**
 * A sequence, flattened; adjacent scopes of the same queue become one scope
 * (TVM's LiftAttrScope("coproc_scope") does the same).
 */
export function seq(...items: (Stmt | undefined | false)[]): Stmt {
  const flat: Stmt[] = [];
  for (const s of items) {
    if (!s) continue;
    for (const t of s.kind === "seq" ? s.body : [s]) {
      const last = flat[flat.length - 1];
      if (t.kind === "scope" && last?.kind === "scope" && last.queue === t.queue) {
        const a = last.body;
        const b = t.body;
        flat[flat.length - 1] = scope(t.queue, `${last.label}; ${t.label}`, (ctx) => {
          a(ctx);
          b(ctx);
        });
      } else {
        flat.push(t);
      }
    }
  }
  return flat.length === 1 ? flat[0]! : { kind: "seq", body: flat };
}
