/**
 * The tuning examples' loop: one or more searchers ("arms": a template each)
 * feeding one Measurer as a pipeline. The measure() batch pulls a candidate
 * whenever its queue has room, the arm behind its share proposes it with
 * every result so far in hand, and each result goes back to its searcher the
 * moment it arrives — no rounds, no board waiting for a round's slowest
 * candidate or for the next round's compiles.
 *
 * Arms share the candidates evenly until each has `warmup` scored trials,
 * then three quarters go to the arm ahead (autotvm tunes one template per
 * task; two templates of one operator competing is this example's own).
 */
import type { Candidate, MeasureReport, MeasureResult, Measurer } from "kernelfarm";
import type { Config, KnobSpace, Searcher } from "./search.ts";

export interface TuneArm<S extends KnobSpace = KnobSpace> {
  name: string;
  searcher: Searcher<S>;
  /** The candidate for a configuration; its id must be unique to the configuration. */
  candidate: (config: Config<S>) => Candidate;
}

/** One measured candidate, in completion order. */
export interface TunePoint {
  arm: string;
  id: string;
  /** The score told to the searcher (NaN: failed). */
  score: number;
  /** Seconds since the tuning began. */
  at: number;
  result: MeasureResult;
}

export interface TuneOptions {
  /** Candidates to measure in all. */
  total: number;
  /** Score of a result (NaN for a failure): what the searchers maximise or minimise. */
  score: (r: MeasureResult) => number;
  higherIsBetter: boolean;
  /** Stop proposing once the best score reaches this (the candidates in flight still finish). */
  stopAt?: number;
  /** Scored trials each arm gets before the leader takes the larger share. Default 16. */
  warmup?: number;
  /** A progress line every this many results (0: none). Default 32. */
  logEvery?: number;
  log?: (line: string) => void;
}

export interface TuneRun {
  points: TunePoint[];
  results: MeasureResult[];
  report: MeasureReport;
  /** Configurations drawn and refused by a searcher's `valid` rule, over all arms. */
  rejected: number;
}

export async function tuneArms(measurer: Measurer, arms: readonly TuneArm[], opts: TuneOptions): Promise<TuneRun> {
  const t0 = performance.now();
  const of = new Map<string, { arm: TuneArm; config: Config<KnobSpace> }>();
  const proposed = new Map<TuneArm, number>(arms.map((a) => [a, 0]));
  const points: TunePoint[] = [];
  const better = (a: number, b: number) => (opts.higherIsBetter ? a > b : a < b);
  let best = NaN;
  let count = 0;
  const warmup = opts.warmup ?? 16;
  const logEvery = opts.logEvery ?? 32;

  /** The share each arm should have had so far. */
  const shares = (): number[] => {
    if (arms.length === 1) return [1];
    const bests = arms.map((a) => a.searcher.best()?.score ?? NaN);
    const warm = arms.every((a) => a.searcher.trials.filter((t) => !Number.isNaN(t.score)).length >= warmup);
    if (!warm || bests.some(Number.isNaN)) return arms.map(() => 1 / arms.length);
    const lead = bests.reduce((li, b, i) => (better(b, bests[li]!) ? i : li), 0);
    return arms.map((_, i) => (i === lead ? 0.75 : 0.25 / (arms.length - 1)));
  };

  const next = (): Candidate | undefined => {
    if (count >= opts.total) return undefined;
    if (opts.stopAt !== undefined && !Number.isNaN(best) && !better(opts.stopAt, best)) return undefined;
    const want = shares();
    // The arm furthest behind its share first; an arm whose space ran dry gives way to the next.
    const order = arms.map((a, i) => ({ a, lag: want[i]! * (count + 1) - proposed.get(a)! })).sort((x, y) => y.lag - x.lag);
    for (const { a } of order) {
      const p = a.searcher.next();
      if (!p) continue;
      const c = a.candidate(p.config);
      of.set(c.id!, { arm: a, config: p.config });
      proposed.set(a, proposed.get(a)! + 1);
      count++;
      return c;
    }
    return undefined;
  };

  const onResult = (r: MeasureResult) => {
    const from = of.get(r.id);
    if (!from) return;
    const score = opts.score(r);
    from.arm.searcher.tell(from.config, score);
    if (!Number.isNaN(score) && (Number.isNaN(best) || better(score, best))) best = score;
    points.push({ arm: from.arm.name, id: r.id, score, at: (performance.now() - t0) / 1e3, result: r });
    if (logEvery > 0 && points.length % logEvery === 0) {
      opts.log?.(
        `  ${points.length}/${opts.total} measured; best so far ${Number.isNaN(best) ? "—" : best.toFixed(0)}; ${((performance.now() - t0) / 1e3).toFixed(1)} s`,
      );
    }
  };

  const results = await measurer.measure({ next, total: opts.total }, { onResult });
  return { points, results, report: measurer.lastReport!, rejected: arms.reduce((n, a) => n + a.searcher.rejected, 0) };
}

/** Candidates until the best-so-far first reaches `target` (1-based), or undefined if it never does. */
export function candidatesToReach(points: readonly { score: number }[], target: number, higherIsBetter: boolean): number | undefined {
  const i = points.findIndex((p) => !Number.isNaN(p.score) && (higherIsBetter ? p.score >= target : p.score <= target));
  return i < 0 ? undefined : i + 1;
}
