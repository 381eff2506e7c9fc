/**
 * autotvm's cost model, in small: gradient-boosted trees (gbt.ts) on the knob
 * values and a few derived features, refitted from scratch as results arrive,
 * used to rank configurations nobody has measured yet.
 *
 * What it fits, and why:
 * - **Targets are ranks** by default (`objective: "rank"`): a measured
 *   configuration's target is its rank among the measured ones, scaled to
 *   [0, 1], best = 1. A search only needs the order of the top candidates,
 *   and ranks make the fit indifferent to the unit (GFLOP/s or cycles), to
 *   higher- or lower-is-better, and to a few outliers far above the rest — the
 *   same reason autotvm's XGBTuner ranks by default (`loss_type="rank"`).
 *   `"log"` fits the log of the score instead (oriented so that higher is
 *   better), which keeps the size of the gaps; both are squared-error fits.
 *   In an early comparison on the synthetic landscapes
 *   (tests/helpers/landscapes.ts; 10 seeds, before the searcher's refining
 *   step) ranks needed fewer trials than the log in three cases of four
 *   (median 65 vs 75, 33 vs 38, 34 vs 39; 61 vs 57 the other way), and clearly
 *   fewer on the GEMM-like landscape than the score over the best (autotvm's
 *   "reg": 89 and 105) or a log clipped at 1/20 of the best (91 and 72).
 *   Ranks are also the easiest to get right: no unit, no sign, no zero.
 * - **A failed configuration (NaN) is a bad score**: its target lies below the
 *   worst measured one, by `failurePenalty` × the spread of the measured
 *   targets. So the model learns the cliffs of the space (a launch that needs
 *   too much shared memory, a kernel that spills) with the same trees that
 *   rank the rest, instead of keeping a second, "valid" classifier: in a
 *   tuning space the cliffs sit right next to the best configurations, and
 *   one model that knows both is what ranks a candidate near the edge.
 *
 * Features (Featurizer): every knob as a number — a numeric choice as its
 * value and, when all of the knob's choices are positive, its log2; a string
 * choice as its index in the knob's choices, and, when every choice of the
 * knob is a split written like "4x2x8x1" (the conv2d templates' tile knobs),
 * each factor and its log2 too. (A tree splits a value and its log2 alike;
 * the log2 moves the cut between two seen values, which matters for values
 * not seen yet — and keeps the features useful to a model that is not a
 * tree.) Then whatever the caller derives from a
 * configuration (threads per block, shared bytes, a register estimate): the
 * names are fixed by the first configuration encoded; a name missing later
 * is NaN, which the trees send left with the smallest values.
 */
import { Gbt, type FeatureMatrix, type GbtOptions } from "./gbt.ts";
import type { Config, KnobSpace } from "./space.ts";

/** Features a caller computes from a configuration: name → number. */
export type DerivedFeatures<S extends KnobSpace> = (config: Config<S>) => Readonly<Record<string, number>>;

/** What the trees are fitted to: ranks scaled to [0, 1], or the log of the score. */
export type Objective = "rank" | "log";

export interface CostModelOptions<S extends KnobSpace> {
  space: S;
  higherIsBetter: boolean;
  features?: DerivedFeatures<S>;
  /** Default "rank". */
  objective?: Objective;
  /** How far below the worst measured target a failure lies, in spreads of the measured targets. Default 0.5. */
  failurePenalty?: number;
  /** The trees (the seed is set per fit). */
  gbt?: Omit<GbtOptions, "seed">;
}

export const DEFAULT_OBJECTIVE: Objective = "rank";
export const DEFAULT_FAILURE_PENALTY = 0.5;

const SPLIT = /^\d+(x\d+)+$/;

/** One configuration's scores for the fit: `score` NaN when it failed. */
export interface ScoredConfig<S extends KnobSpace> {
  readonly config: Config<S>;
  readonly score: number;
}

/**
 * Configurations as rows of numbers. Each knob's choices are encoded once, at
 * construction, into a table from choice to feature values, so encoding a
 * configuration is a lookup per knob plus the caller's derived features.
 */
export class Featurizer<S extends KnobSpace> {
  private readonly knobs: { name: string; table: Map<number | string, number[]> }[] = [];
  private readonly knobNames: string[] = [];
  private derivedNames: string[] | undefined;

  constructor(
    space: S,
    private readonly derived?: DerivedFeatures<S>,
  ) {
    for (const [name, choices] of Object.entries(space)) {
      const table = new Map<number | string, number[]>();
      const numeric = choices.every((c) => typeof c === "number");
      const positive = numeric && choices.every((c) => (c as number) > 0);
      const splits = !numeric && choices.length > 0 && choices.every((c) => typeof c === "string" && SPLIT.test(c));
      const parts = splits ? String(choices[0]).split("x").length : 0;
      const sameArity = splits && choices.every((c) => String(c).split("x").length === parts);
      if (numeric) {
        this.knobNames.push(name, ...(positive ? [`log2 ${name}`] : []));
        for (const c of choices) table.set(c, positive ? [c as number, Math.log2(c as number)] : [c as number]);
      } else {
        this.knobNames.push(`${name} index`);
        if (sameArity) for (let p = 0; p < parts; p++) this.knobNames.push(`${name}[${p}]`, `log2 ${name}[${p}]`);
        choices.forEach((c, i) => {
          const factors = sameArity ? String(c).split("x").map(Number) : [];
          table.set(c, [i, ...factors.flatMap((f) => [f, f > 0 ? Math.log2(f) : NaN])]);
        });
      }
      this.knobs.push({ name, table });
    }
  }

  /** Feature names, in column order; the derived ones appear after the first encode(). */
  get names(): readonly string[] {
    return [...this.knobNames, ...(this.derivedNames ?? [])];
  }

  /** One row per configuration. */
  encode(configs: readonly Config<S>[]): FeatureMatrix {
    if (this.derived && this.derivedNames === undefined && configs.length > 0) this.derivedNames = Object.keys(this.derived(configs[0]!));
    const derivedNames = this.derivedNames ?? [];
    const cols = this.knobNames.length + derivedNames.length;
    const data = new Float64Array(configs.length * cols);
    configs.forEach((config, i) => {
      let at = i * cols;
      for (const { name, table } of this.knobs) {
        const values = table.get((config as Record<string, number | string>)[name]!);
        if (!values) throw new RangeError(`${name}=${String((config as Record<string, unknown>)[name])} is not one of the knob's choices`);
        for (const v of values) data[at++] = v;
      }
      if (this.derived) {
        const d = this.derived(config);
        for (const name of derivedNames) {
          const v = d[name];
          data[at++] = typeof v === "number" ? v : NaN;
        }
      }
    });
    return { rows: configs.length, cols, data };
  }
}

/**
 * The fit's targets for `scores` (NaN: failed), higher = better whatever the
 * metric's direction. See the module comment for the two objectives and for
 * where failures go. With `"log"`, scores that are not all positive are used
 * as they are (oriented), since their log does not exist.
 */
export function trainingTargets(scores: readonly number[], higherIsBetter: boolean, objective: Objective, failurePenalty: number): Float64Array {
  const out = new Float64Array(scores.length);
  const ok: number[] = [];
  scores.forEach((s, i) => {
    if (!Number.isNaN(s)) ok.push(i);
  });
  const sign = higherIsBetter ? 1 : -1;
  if (objective === "rank") {
    // Average ranks for ties, so equal scores get equal targets.
    const order = ok.slice().sort((a, b) => sign * (scores[a]! - scores[b]!));
    const denom = Math.max(1, order.length - 1);
    for (let r = 0; r < order.length;) {
      let e = r;
      while (e + 1 < order.length && scores[order[e + 1]!] === scores[order[r]!]) e++;
      for (let k = r; k <= e; k++) out[order[k]!] = (r + e) / 2 / denom;
      r = e + 1;
    }
  } else {
    const logs = ok.every((i) => scores[i]! > 0);
    for (const i of ok) out[i] = sign * (logs ? Math.log(scores[i]!) : scores[i]!);
  }
  let lo = Infinity;
  let hi = -Infinity;
  for (const i of ok) {
    lo = Math.min(lo, out[i]!);
    hi = Math.max(hi, out[i]!);
  }
  const failed = ok.length === 0 ? 0 : lo - failurePenalty * (hi > lo ? hi - lo : 1);
  scores.forEach((s, i) => {
    if (Number.isNaN(s)) out[i] = failed;
  });
  return out;
}

/**
 * A fitted cost model: fit() on the scored configurations so far (from
 * scratch: with a few hundred rows a refit costs milliseconds, and it keeps
 * the model a pure function of the data and the seed), predict() for any
 * configurations — higher means predicted better, in the objective's units.
 */
export class CostModel<S extends KnobSpace> {
  readonly featurizer: Featurizer<S>;
  private gbt: Gbt | undefined;
  private readonly objective: Objective;
  private readonly failurePenalty: number;

  constructor(private readonly opts: CostModelOptions<S>) {
    this.featurizer = new Featurizer(opts.space, opts.features);
    this.objective = opts.objective ?? DEFAULT_OBJECTIVE;
    this.failurePenalty = opts.failurePenalty ?? DEFAULT_FAILURE_PENALTY;
    if (!(this.failurePenalty >= 0)) throw new RangeError(`failurePenalty must be ≥ 0, got ${this.failurePenalty}`);
  }

  /** Whether fit() has run. */
  get trained(): boolean {
    return this.gbt !== undefined;
  }

  fit(scored: readonly ScoredConfig<S>[], seed = 0): void {
    const x = this.featurizer.encode(scored.map((s) => s.config));
    const y = trainingTargets(
      scored.map((s) => s.score),
      this.opts.higherIsBetter,
      this.objective,
      this.failurePenalty,
    );
    this.gbt = Gbt.fit(x, y, { ...this.opts.gbt, seed });
  }

  /** Predicted goodness per configuration; throws before fit(). */
  predict(configs: readonly Config<S>[]): Float64Array {
    if (!this.gbt) throw new Error("CostModel.predict() before fit()");
    return this.gbt.predict(this.featurizer.encode(configs));
  }
}
