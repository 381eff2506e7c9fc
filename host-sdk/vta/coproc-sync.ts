/**
 * Where the dependency tokens go: the plan TVM's CoProcSync pass
 * (`CoProcInstDepDetector`, src/tir/transforms/coproc_sync.cc) makes over a
 * lowered VTA program, re-derived for lowered.ts programs:
 *
 * * Between two consecutive coprocessor statements of different queues,
 *   `push(from, to)` at the end of the first and `pop(from, to)` at the start
 *   of the second.
 * * A loop is a statement too: it enters like its first scope and exits like
 *   its last. Its body's last → first pair is planned as a loop-carried
 *   dependency (push after the last scope, pop before the first), and the
 *   loop remembers that it exits with that push still unmatched and enters
 *   expecting that pop.
 * * Next to a loop, those remembered tokens are matched: a neighbour that
 *   needs the same (from, to) token shares it; an unmatched remembered push is
 *   popped right after the loop, an unmatched remembered pop is fed by a push
 *   right before it.
 * * At the top level, the first statement's remembered pops get pushes before
 *   it and the last statement's remembered pushes get pops after it.
 *
 * Tokens planned at a scope go inside it (before / after its body); tokens
 * planned at a loop go outside it.
 */
import type { QueueId } from "../../vta/index.ts";
import type { ForStmt, ScopeStmt, Stmt } from "./stmt.ts";

export interface DepOp {
  op: "push" | "pop";
  from: QueueId;
  to: QueueId;
}

export interface SyncPlan {
  before: Map<ScopeStmt | ForStmt, DepOp[]>;
  after: Map<ScopeStmt | ForStmt, DepOp[]>;
}

type Pair = readonly [QueueId, QueueId];

interface State {
  node: ScopeStmt | ForStmt;
  enter: Set<QueueId>;
  exit: Set<QueueId>;
  /** Pops this statement performs on entry that a predecessor may match. */
  enterPop: Pair[];
  /** Pushes this statement leaves on exit that a successor may match. */
  exitPush: Pair[];
}

const has = (list: readonly Pair[], p: Pair) => list.some((q) => q[0] === p[0] && q[1] === p[1]);

export function planCoprocSync(root: Stmt): SyncPlan {
  const plan: SyncPlan = { before: new Map(), after: new Map() };
  const add = (where: Map<ScopeStmt | ForStmt, DepOp[]>, node: ScopeStmt | ForStmt, op: DepOp) => {
    const list = where.get(node);
    if (list) list.push(op);
    else where.set(node, [op]);
  };
  const push = (p: Pair): DepOp => ({ op: "push", from: p[0], to: p[1] });
  const pop = (p: Pair): DepOp => ({ op: "pop", from: p[0], to: p[1] });

  /** Plans the tokens between `prev` and `next`; returns what stays unmatched at prev's exit and next's entry. */
  const inject = (prev: State, next: State): { exitPush: Pair[]; enterPop: Pair[] } => {
    if (prev.exitPush.length === 0 && next.enterPop.length === 0 && prev.exit.size === 1 && next.enter.size === 1) {
      const from = [...prev.exit][0]!;
      const to = [...next.enter][0]!;
      if (from === to) return { exitPush: [], enterPop: [] };
      const p: Pair = [from, to];
      add(plan.after, prev.node, push(p));
      add(plan.before, next.node, pop(p));
      return { exitPush: [p], enterPop: [p] };
    }
    const vpush = [...prev.exitPush];
    const vpop = [...next.enterPop];
    const prevAfter: DepOp[] = [];
    const nextBefore: DepOp[] = [];
    for (const from of prev.exit) {
      for (const to of next.enter) {
        if (from === to) continue;
        const p: Pair = [from, to];
        if (!has(prev.exitPush, p)) {
          vpush.push(p);
          prevAfter.push(push(p));
        }
        if (!has(next.enterPop, p)) {
          vpop.push(p);
          nextBefore.push(pop(p));
        }
      }
    }
    const exitPush: Pair[] = [];
    const enterPop: Pair[] = [];
    for (const p of vpush) {
      if (has(vpop, p)) exitPush.push(p);
      else prevAfter.push(pop(p));
    }
    for (const p of vpop) {
      if (has(vpush, p)) enterPop.push(p);
      else nextBefore.push(push(p));
    }
    for (const op of prevAfter) add(plan.after, prev.node, op);
    for (const op of nextBefore) add(plan.before, next.node, op);
    return { exitPush, enterPop };
  };

  // The first and last coprocessor statement of the sequence being visited.
  const at: { first: State | undefined; last: State | undefined } = { first: undefined, last: undefined };
  const update = (curr: State) => {
    if (at.last) {
      inject(at.last, curr);
      at.last = curr;
    } else {
      at.first = at.last = curr;
    }
  };
  const visit = (s: Stmt): void => {
    switch (s.kind) {
      case "seq":
        s.body.forEach(visit);
        return;
      case "scope":
        update({ node: s, enter: new Set([s.queue]), exit: new Set([s.queue]), enterPop: [], exitPush: [] });
        return;
      case "for": {
        const saved = { ...at };
        at.first = at.last = undefined;
        visit(s.body);
        let curr: State | undefined;
        // (visit() moved them; read them afresh)
        const first = at.first as State | undefined;
        const last = at.last as State | undefined;
        if (first && last) {
          const carried = inject(last, first);
          curr = { node: s, enter: new Set(first.enter), exit: new Set(last.exit), enterPop: carried.enterPop, exitPush: carried.exitPush };
        }
        at.first = saved.first;
        at.last = saved.last;
        if (curr) update(curr);
        return;
      }
    }
  };
  visit(root);
  const { first, last } = at;
  if (first && last) {
    for (const p of first.enterPop) add(plan.before, first.node, push(p));
    for (const p of last.exitPush) add(plan.after, last.node, pop(p));
  }
  return plan;
}
