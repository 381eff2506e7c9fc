/**
 * The search over a knob space for the tuning examples, one proposal at a
 * time: next() proposes a configuration never proposed before, tell() takes
 * its score whenever it arrives — in any order, with any number of proposals
 * outstanding. No rounds and no barrier: a farm with boards free asks for
 * more work while slow candidates are still compiling or running.
 *
 * Two strategies:
 * - `"evolution"`: random draws until `randomFirst` results are in, then
 *   mutations (one or two knobs) of the `elite` best so far, with an `explore`
 *   share still drawn at random. The examples' search before the cost model,
 *   without its rounds; the baseline the model is compared against.
 * - `"model"`: autotvm's idea. Random draws until `minTrain` results are in;
 *   then an `explore` share (ε) of plain random draws, and the rest chosen by
 *   cost models (cost-model.ts: gradient-boosted trees on the knobs), two
 *   ways:
 *   - *refine* (`refineShare` of them): the best-predicted unmeasured
 *     neighbour (one knob changed, or two) of the best configuration so far,
 *     predicted by a local model fitted on the best 32 results and the
 *     failures around the best. Finding the region is not the hard part of a
 *     tuning space; the last 10 % is, where several knobs each change the time
 *     by a few per cent. A model of the whole space ranks those neighbours
 *     badly (its rows and its targets are spent on telling bad from worse);
 *     one fitted on the top only sees the small effects. On the synthetic
 *     landscapes (tests/helpers/landscapes.ts, 40–80 seeds, 1 and 8 boards) the
 *     share of seeds within the issue's target rose from 57–80 % with the
 *     global model alone to 70–85 % with refining.
 *   - *model* (the others): the configuration a model of all results ranks
 *     best, among a pool of uniform draws, mutations of the best measured
 *     and two generations of mutations of the pool's own best (a cheap
 *     stand-in for autotvm's simulated annealing over the model). It finds
 *     the regions the refining does not reach. This model is refitted once
 *     enough new results arrived ({@link SearcherOptions.retrainEvery}), and a
 *     burst of its proposals between two fits is kept apart: a candidate
 *     within one knob of a proposal whose result the model has not seen is
 *     passed over while others rank nearly as high.
 *
 * Either way a configuration is proposed at most once (never again while it is
 * outstanding, nor after its result), configurations `valid` refuses are never
 * proposed, and a failed one (score NaN) counts as a result: it ends the random
 * phase like any other, and the model learns from it as a bad score.
 *
 * The round-based propose()/record() of the first examples are kept,
 * unchanged (the same draws for the same seed), until the examples move to
 * next()/tell(); search() runs them for evolution, and rounds of next() for
 * the model.
 */
import { CostModel, type DerivedFeatures, type Objective } from "./cost-model.ts";
import type { GbtOptions } from "./gbt.ts";
import { configAt, knobDistance, mutate, neighbours, pick, randomConfig, seededRandom, spaceSize, type Config, type KnobSpace } from "./space.ts";

export { configKey, mutate, randomConfig, seededRandom, spaceSize } from "./space.ts";
export type { Config, KnobSpace } from "./space.ts";

/**
 * Where a proposal came from: a given baseline, a uniform draw, a mutation of
 * the elite (evolution), the global model's pick from its pool, the local
 * model's pick among the best configuration's neighbours.
 */
export type TrialOrigin = "initial" | "random" | "mutation" | "model" | "refine";

export interface Trial<S extends KnobSpace> {
  config: Config<S>;
  /** The metric; NaN when the configuration failed (did not compile, run or check). */
  score: number;
  /** The propose() round it was drawn in; absent for a next() proposal. */
  round?: number;
  origin: TrialOrigin;
}

/** One proposal of next(). */
export interface Proposal<S extends KnobSpace> {
  config: Config<S>;
  origin: TrialOrigin;
}

export type Strategy = "evolution" | "model";

/** How a Searcher draws: the knob space and its policy. */
export interface SearcherOptions<S extends KnobSpace> {
  space: S;
  seed: number;
  higherIsBetter: boolean;
  /** Default "evolution" (what the examples did before the cost model). */
  strategy?: Strategy;
  /** Proposed first, in order, whatever the strategy (a baseline, the library's default schedule); not checked by `valid`. */
  initial?: readonly Config<S>[];
  /** Configurations that cannot work are never proposed (and counted in `rejected` when a draw meets them). */
  valid?: (config: Config<S>) => boolean;
  /**
   * Share of proposals drawn at random once the strategy has begun to
   * exploit, to keep exploring. Default 0.25 for evolution (the examples'
   * share), 0.1 for the model (ε).
   */
  explore?: number;
  /**
   * Evolution: parents of a mutation are the best this many so far. Model:
   * refining moves to the neighbours of the next of these once all of the
   * best's are known. Default 4.
   */
  elite?: number;
  /**
   * Evolution: results (failures included) drawn at random before mutations
   * begin. Default 64: the conv2d example's two random rounds of 32 (pass
   * 2 × batch size to match another example's rounds).
   */
  randomFirst?: number;
  /** propose() only: rounds drawn purely at random before evolution starts. Default 2. */
  randomRounds?: number;
  /** Model: features derived from a configuration, beside the knobs (threads per block, shared bytes, …). */
  features?: DerivedFeatures<S>;
  /** Model: results (failures included, at least two that succeeded) drawn at random before the first fit. Default 24. */
  minTrain?: number;
  /**
   * Model: share of the model's proposals (those not drawn at random) that
   * refine the best configuration so far (see the module comment). Default
   * 0.7: on the synthetic landscapes of tests/helpers/landscapes.ts, 0.5 to
   * 0.9 did about as well (within the noise of 40–80 seeds), 1 (no global
   * picks) worse on the GEMM-like one, 0 (the global model alone) worse on
   * both.
   */
  refineShare?: number;
  /**
   * Model: refit once this many new results arrived since the last fit, or
   * `retrainGrowth` × the results of the last fit, whichever is more.
   * Defaults 8 and 0.1: early, when every result moves the model, a refit
   * every 8; later every 10 % growth, so the cost per result stays bounded
   * (a fit on n rows costs O(n), every 0.1 n results).
   */
  retrainEvery?: number;
  retrainGrowth?: number;
  /** Model: configurations scored by the model per pool (drawn after each fit, and when a pool runs dry). Default 4000. */
  poolSize?: number;
  /** Model: what the trees fit (cost-model.ts). Default "rank". */
  objective?: Objective;
  /** Model: trees, depth, shrinkage… (gbt.ts defaults). */
  gbt?: Omit<GbtOptions, "seed">;
}

export interface ResolvedSearcherOptions<S extends KnobSpace> {
  readonly space: S;
  readonly seed: number;
  readonly higherIsBetter: boolean;
  readonly strategy: Strategy;
  readonly initial: readonly Config<S>[];
  readonly valid: ((config: Config<S>) => boolean) | undefined;
  readonly explore: number;
  readonly elite: number;
  readonly randomFirst: number;
  readonly randomRounds: number;
  readonly features: DerivedFeatures<S> | undefined;
  readonly minTrain: number;
  readonly refineShare: number;
  readonly retrainEvery: number;
  readonly retrainGrowth: number;
  readonly poolSize: number;
  readonly objective: Objective | undefined;
  readonly gbt: Omit<GbtOptions, "seed"> | undefined;
}

export const DEFAULT_STRATEGY: Strategy = "evolution";
export const DEFAULT_EXPLORE_EVOLUTION = 0.25;
export const DEFAULT_EXPLORE_MODEL = 0.1;
export const DEFAULT_ELITE = 4;
export const DEFAULT_RANDOM_FIRST = 64;
export const DEFAULT_RANDOM_ROUNDS = 2;
export const DEFAULT_MIN_TRAIN = 24;
export const DEFAULT_REFINE_SHARE = 0.7;
export const DEFAULT_RETRAIN_EVERY = 8;
export const DEFAULT_RETRAIN_GROWTH = 0.1;
export const DEFAULT_POOL_SIZE = 4000;

/** Applies the defaults; throws RangeError for an option out of range. */
export function resolveSearcherOptions<S extends KnobSpace>(o: SearcherOptions<S>): ResolvedSearcherOptions<S> {
  const strategy = o.strategy ?? DEFAULT_STRATEGY;
  const r: ResolvedSearcherOptions<S> = {
    space: o.space,
    seed: o.seed,
    higherIsBetter: o.higherIsBetter,
    strategy,
    initial: o.initial ?? [],
    valid: o.valid,
    explore: o.explore ?? (strategy === "model" ? DEFAULT_EXPLORE_MODEL : DEFAULT_EXPLORE_EVOLUTION),
    elite: o.elite ?? DEFAULT_ELITE,
    randomFirst: o.randomFirst ?? DEFAULT_RANDOM_FIRST,
    randomRounds: o.randomRounds ?? DEFAULT_RANDOM_ROUNDS,
    features: o.features,
    minTrain: o.minTrain ?? DEFAULT_MIN_TRAIN,
    refineShare: o.refineShare ?? DEFAULT_REFINE_SHARE,
    retrainEvery: o.retrainEvery ?? DEFAULT_RETRAIN_EVERY,
    retrainGrowth: o.retrainGrowth ?? DEFAULT_RETRAIN_GROWTH,
    poolSize: o.poolSize ?? DEFAULT_POOL_SIZE,
    objective: o.objective,
    gbt: o.gbt,
  };
  const check = (ok: boolean, what: string) => {
    if (!ok) throw new RangeError(`Searcher option ${what}`);
  };
  check(strategy === "evolution" || strategy === "model", `strategy must be "evolution" or "model", got ${JSON.stringify(strategy)}`);
  check(r.explore >= 0 && r.explore <= 1, `explore must be in [0, 1], got ${r.explore}`);
  check(r.refineShare >= 0 && r.refineShare <= 1, `refineShare must be in [0, 1], got ${r.refineShare}`);
  for (const [name, v, min] of [
    ["elite", r.elite, 1],
    ["randomFirst", r.randomFirst, 0],
    ["randomRounds", r.randomRounds, 0],
    ["minTrain", r.minTrain, 2],
    ["retrainEvery", r.retrainEvery, 1],
    ["poolSize", r.poolSize, 1],
  ] as const) {
    check(Number.isInteger(v) && v >= min, `${name} must be an integer ≥ ${min}, got ${v}`);
  }
  check(r.retrainGrowth >= 0, `retrainGrowth must be ≥ 0, got ${r.retrainGrowth}`);
  return r;
}

/** Attempts at a new configuration from one kind of draw before giving up on it. */
const MAX_DRAWS_PER_SLOT = 2000;
/** Spaces up to this size are swept in full once uniform draws run dry, so that next() finds their last configurations. */
const SWEEP_LIMIT = 1 << 22;
/** The pool's parents: mutations of the best this many measured configurations. */
const POOL_PARENTS = 16;
/** Each climbing generation of the pool mutates the pool's best this many. */
const CLIMB_TOP = 32;
/** The local model of a refining step is fitted on the best this many results (and the failures around the best). */
const REFINE_ROWS = 32;
/** A refining step looks at every one-knob neighbour and at most this many two-knob neighbours. */
const REFINE_PAIRS = 1024;
/** Queue entries looked at for one that is not next to an unseen result before taking the first. */
const DIVERSITY_WINDOW = 64;

interface Queued<S extends KnobSpace> {
  config: Config<S>;
  key: string;
}

/**
 * The search's state. next()/tell() drive it one configuration at a time;
 * propose()/record(), for the round-based examples, a round at a time — a
 * Searcher is driven one way or the other, not both. Several Searchers can
 * feed one measure() — two templates of one operator competing for the same
 * boards, say.
 */
export class Searcher<S extends KnobSpace> {
  /** Every result, in the order it was told (or recorded). */
  readonly trials: Trial<S>[] = [];
  private readonly o: ResolvedSearcherOptions<S>;
  private readonly knobs: string[];
  private readonly random: () => number;
  /** Keys proposed so far: outstanding or told. */
  private readonly seen = new Set<string>();
  /** Keys `valid` refused (a cache: the pool asks too). */
  private readonly refused = new Set<string>();
  /** Refused keys that a proposal's draw met: what `rejected` counts. */
  private readonly rejectedKeys = new Set<string>();
  private readonly outstanding = new Map<string, Proposal<S>>();
  /** Trials that scored, best first (ties: the earlier first). */
  private readonly scored: Trial<S>[] = [];
  private initialAt = 0;
  private rounds = 0;
  private sweepStart = -1;
  private swept = 0;
  private exhausted = false;
  private model: CostModel<S> | undefined;
  private fits = 0;
  private trainedOn = 0;
  private local: CostModel<S> | undefined;
  /** Results told when the local model was last fitted. */
  private localOn = -1;
  private queue: Queued<S>[] = [];
  private queueAt = 0;
  /** Proposals whose results the model has not been fitted on: kept apart from the next picks. */
  private unseenByModel: Config<S>[] = [];

  constructor(opts: SearcherOptions<S>) {
    this.o = resolveSearcherOptions(opts);
    this.knobs = Object.keys(opts.space);
    this.random = seededRandom(opts.seed);
  }

  /** Distinct configurations that `valid` refused when a proposal's draw met them. */
  get rejected(): number {
    return this.rejectedKeys.size;
  }

  /** Proposals whose results have not been told. */
  get pending(): number {
    return this.outstanding.size;
  }

  /** Rounds proposed so far (propose()). */
  get round(): number {
    return this.rounds;
  }

  /** Refits of the cost model so far. */
  get modelFits(): number {
    return this.fits;
  }

  /** The best trial so far, if any scored. */
  best(): Trial<S> | undefined {
    return this.scored[0];
  }

  /**
   * A configuration never proposed before, or undefined once no new valid one
   * can be found (the space is exhausted; for spaces of more than 2²²
   * configurations, once 2,000 uniform draws in a row met only known or
   * refused ones).
   */
  next(): Proposal<S> | undefined {
    if (this.exhausted) return undefined;
    const p = this.nextInitial() ?? (this.o.strategy === "model" ? this.nextByModel() : this.nextByEvolution());
    if (p) {
      this.outstanding.set(this.keyOf(p.config), p);
      if (this.o.strategy === "model") this.unseenByModel.push(p.config);
    }
    return p;
  }

  /**
   * The result of a proposal: its score, NaN when it failed. Any order, any
   * time. Throws for a configuration that is not outstanding (never
   * proposed, or told already) and for an infinite score (a timing of 0
   * somewhere upstream, not a result).
   */
  tell(config: Config<S>, score: number): void {
    const key = this.keyOf(config);
    const p = this.outstanding.get(key);
    if (!p) throw new Error(this.seen.has(key) ? `tell(): ${key} is not outstanding (told already?)` : `tell(): ${key} was never proposed by this Searcher`);
    if (!Number.isNaN(score) && !Number.isFinite(score)) throw new RangeError(`tell(): ${key} scored ${score}; a failure is NaN`);
    this.outstanding.delete(key);
    this.add({ config: p.config, score, origin: p.origin });
  }

  /** @deprecated use next()/tell(). Up to `size` new configurations for the next round: fewer (or none) once the space runs dry. */
  propose(size: number): Proposal<S>[] {
    const { o, random } = this;
    const round = this.rounds++;
    const batch: Proposal<S>[] = [];
    if (round === 0) {
      for (const c of o.initial) {
        const key = this.keyOf(c);
        if (this.seen.has(key) || batch.length >= size) continue;
        this.seen.add(key);
        batch.push({ config: { ...c }, origin: "initial" });
      }
      this.initialAt = o.initial.length;
    }
    const parents = this.scored.slice(0, o.elite);
    const evolve = round >= o.randomRounds && parents.length > 0;
    while (batch.length < size) {
      const mutation = evolve && random() >= o.explore;
      const c = this.draw(mutation ? () => mutate(pick(parents, random).config, o.space, random) : () => randomConfig(o.space, random));
      // Mutations of the elite may be exhausted before the space is: fall back to random draws.
      const chosen = c ?? (mutation ? this.draw(() => randomConfig(o.space, random)) : undefined);
      if (!chosen) break;
      batch.push({ config: chosen, origin: c && mutation ? "mutation" : "random" });
    }
    return batch;
  }

  /** @deprecated use next()/tell(). The scores of a proposed round, in its order (NaN: failed). */
  record(batch: readonly Proposal<S>[], scores: readonly number[]): void {
    const round = this.rounds - 1;
    batch.forEach((b, i) => this.add({ config: b.config, score: scores[i] ?? NaN, round, origin: b.origin }));
  }

  private add(t: Trial<S>): void {
    this.trials.push(t);
    if (Number.isNaN(t.score)) return;
    const better = this.o.higherIsBetter ? (a: number, b: number) => a > b : (a: number, b: number) => a < b;
    // Binary search for the first trial t beats: after every equal one.
    let lo = 0;
    let hi = this.scored.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (better(t.score, this.scored[mid]!.score)) hi = mid;
      else lo = mid + 1;
    }
    this.scored.splice(lo, 0, t);
  }

  /** The key in the space's knob order, whatever the order of the object's keys. */
  private keyOf(config: Readonly<Record<string, number | string>>): string {
    return this.knobs.map((k) => `${k}=${config[k]}`).join(",");
  }

  private nextInitial(): Proposal<S> | undefined {
    while (this.initialAt < this.o.initial.length) {
      const c = this.o.initial[this.initialAt++]!;
      const key = this.keyOf(c);
      if (this.seen.has(key)) continue;
      this.seen.add(key);
      return { config: { ...c }, origin: "initial" };
    }
    return undefined;
  }

  private nextRandom(): Proposal<S> | undefined {
    const c = this.draw(() => randomConfig(this.o.space, this.random)) ?? this.sweep();
    return c && { config: c, origin: "random" };
  }

  /** The examples' evolution, one proposal at a time: the elite is re-read at every proposal. */
  private nextByEvolution(): Proposal<S> | undefined {
    const { o, random } = this;
    const parents = this.scored.slice(0, o.elite);
    const evolve = this.trials.length >= o.randomFirst && parents.length > 0;
    if (evolve && random() >= o.explore) {
      const c = this.draw(() => mutate(pick(parents, random).config, o.space, random));
      if (c) return { config: c, origin: "mutation" };
    }
    return this.nextRandom();
  }

  private nextByModel(): Proposal<S> | undefined {
    const { o } = this;
    if (this.trials.length < o.minTrain || this.scored.length < 2 || this.random() < o.explore) return this.nextRandom();
    if (this.random() < o.refineShare) {
      const c = this.refine();
      if (c) return { config: c, origin: "refine" };
    }
    this.refresh();
    let c = this.fromQueue();
    if (!c) {
      // The pool ran dry between two fits: draw another from the same model.
      this.buildQueue();
      c = this.fromQueue();
    }
    return c ? { config: c, origin: "model" } : this.nextRandom();
  }

  /**
   * The refining step: among the neighbours of the best configuration (of
   * the next best, if all of its are known), the one the local model
   * predicts best. The local model is refitted whenever a result arrived
   * since its last fit: on a few dozen rows a fit takes a millisecond or two
   * (bench/search-model.ts), less than measuring anything.
   */
  private refine(): Config<S> | undefined {
    const { o } = this;
    const best = this.scored[0];
    if (!best) return undefined;
    if (this.localOn !== this.trials.length) {
      const around = this.trials.filter((t) => Number.isNaN(t.score) && knobDistance(t.config, best.config, this.knobs) <= 2);
      this.local ??= this.newModel();
      this.local.fit([...this.scored.slice(0, REFINE_ROWS), ...around], (Math.imul(o.seed, 0x85ebca6b) + this.trials.length) >>> 0);
      this.localOn = this.trials.length;
    }
    for (const parent of this.scored.slice(0, o.elite)) {
      const found = new Map<string, Config<S>>();
      for (const c of neighbours(parent.config, o.space, this.random, REFINE_PAIRS)) {
        const key = this.keyOf(c);
        if (!found.has(key) && this.unknown(key, c)) found.set(key, c);
      }
      if (found.size === 0) continue;
      const keys = [...found.keys()];
      const predicted = this.local!.predict([...found.values()]);
      let at = 0;
      for (let i = 1; i < keys.length; i++) if (predicted[i]! > predicted[at]!) at = i;
      this.seen.add(keys[at]!);
      return found.get(keys[at]!)!;
    }
    return undefined;
  }

  /** Whether `c` (of `key`) was never proposed and `valid` accepts it; caches refusals. */
  private unknown(key: string, c: Config<S>): boolean {
    if (this.seen.has(key) || this.refused.has(key)) return false;
    if (this.o.valid && !this.o.valid(c)) {
      this.refused.add(key);
      return false;
    }
    return true;
  }

  private newModel(): CostModel<S> {
    const { o } = this;
    return new CostModel({
      space: o.space,
      higherIsBetter: o.higherIsBetter,
      ...(o.features ? { features: o.features } : {}),
      ...(o.objective ? { objective: o.objective } : {}),
      ...(o.gbt ? { gbt: o.gbt } : {}),
    });
  }

  /** Refits the model when enough new results arrived, and draws a new pool after each fit. */
  private refresh(): void {
    const { o } = this;
    const told = this.trials.length;
    const due = !this.model || told - this.trainedOn >= Math.max(o.retrainEvery, Math.ceil(o.retrainGrowth * this.trainedOn));
    if (!due) return;
    this.model ??= this.newModel();
    this.model.fit(this.trials, (Math.imul(o.seed, 0x9e3779b1) + this.fits) >>> 0);
    this.fits++;
    this.trainedOn = told;
    this.unseenByModel = [...this.outstanding.values()].map((p) => p.config);
    this.buildQueue();
  }

  /**
   * The pool, ranked by the model, best first: half uniform draws, a quarter
   * mutations of the 16 best measured, and two generations of mutations of
   * the pool's own 32 best (an eighth each). Only valid configurations never
   * proposed; `valid`'s verdicts are cached.
   */
  private buildQueue(): void {
    const { o, random } = this;
    const model = this.model!;
    const found = new Map<string, Config<S>>();
    const configs: Config<S>[] = [];
    const consider = (c: Config<S>) => {
      const key = this.keyOf(c);
      if (found.has(key) || !this.unknown(key, c)) return;
      found.set(key, c);
      configs.push(c);
    };
    const uniform = Math.round(o.poolSize / 2);
    for (let i = 0; i < uniform; i++) consider(randomConfig(o.space, random));
    const parents = this.scored.slice(0, POOL_PARENTS);
    const mutations = Math.round(o.poolSize / 4);
    for (let i = 0; i < mutations && parents.length > 0; i++) consider(mutate(pick(parents, random).config, o.space, random));
    let scores = Array.from(configs.length > 0 ? model.predict(configs) : []);
    const climb = Math.round(o.poolSize / 8);
    for (let g = 0; g < 2 && configs.length > 0; g++) {
      const top = topIndices(scores, CLIMB_TOP);
      const from = configs.length;
      for (let i = 0; i < climb; i++) consider(mutate(configs[top[i % top.length]!]!, o.space, random));
      if (configs.length > from) scores = scores.concat(Array.from(model.predict(configs.slice(from))));
    }
    const order = configs.map((_, i) => i).sort((a, b) => scores[b]! - scores[a]! || a - b);
    this.queue = order.map((i) => ({ config: configs[i]!, key: this.keyOf(configs[i]!) }));
    this.queueAt = 0;
  }

  /**
   * The best-ranked queued configuration not proposed yet — preferring, among
   * the next DIVERSITY_WINDOW, one that differs in at least two knobs from
   * every proposal the model has not seen the result of, so that a burst of
   * proposals between two fits does not spend itself on one neighbourhood.
   */
  private fromQueue(): Config<S> | undefined {
    let first = -1;
    let chosen = -1;
    for (let k = this.queueAt, looked = 0; k < this.queue.length && looked < DIVERSITY_WINDOW; k++) {
      const e = this.queue[k]!;
      if (this.seen.has(e.key)) {
        if (k === this.queueAt) this.queueAt++;
        continue;
      }
      looked++;
      if (first < 0) first = k;
      if (this.unseenByModel.every((c) => knobDistance(c, e.config, this.knobs) >= 2)) {
        chosen = k;
        break;
      }
    }
    const at = chosen >= 0 ? chosen : first;
    if (at < 0) return undefined;
    const e = this.queue[at]!;
    this.seen.add(e.key);
    return e.config;
  }

  /** A valid configuration not proposed before, or undefined when `make` runs dry. */
  private draw(make: () => Config<S>): Config<S> | undefined {
    for (let i = 0; i < MAX_DRAWS_PER_SLOT; i++) {
      const c = make();
      if (this.admit(c)) return c;
    }
    return undefined;
  }

  /** Takes `c` if it was never proposed and `valid` allows it; a refusal is remembered (and counted in `rejected`). */
  private admit(c: Config<S>): boolean {
    const key = this.keyOf(c);
    if (this.seen.has(key)) return false;
    if (this.refused.has(key) || (this.o.valid && !this.o.valid(c))) {
      this.refused.add(key);
      this.rejectedKeys.add(key);
      return false;
    }
    this.seen.add(key);
    return true;
  }

  /**
   * The space in index order from a random start, each configuration visited
   * once over the whole search: what finds the last few valid configurations
   * of a small space that uniform draws keep missing.
   */
  private sweep(): Config<S> | undefined {
    const size = spaceSize(this.o.space);
    if (size > SWEEP_LIMIT) return undefined;
    if (this.sweepStart < 0) this.sweepStart = Math.floor(this.random() * size);
    while (this.swept < size) {
      const c = configAt(this.o.space, (this.sweepStart + this.swept++) % size);
      if (this.admit(c)) return c;
    }
    this.exhausted = true;
    return undefined;
  }
}

/** Indices of the `k` largest scores, largest first. */
function topIndices(scores: readonly number[], k: number): number[] {
  return scores
    .map((_, i) => i)
    .sort((a, b) => scores[b]! - scores[a]! || a - b)
    .slice(0, k);
}

/**
 * Runs the search to `total` measured configurations, or until no new valid
 * configuration can be drawn, one measure() batch at a time: propose()/record()
 * rounds for evolution (the examples' behaviour, unchanged), batches of next()
 * for the model.
 */
export async function search<S extends KnobSpace>(opts: SearchOptions<S>): Promise<SearchResult<S>> {
  const s = new Searcher(opts);
  if (opts.strategy === "model") {
    // The model's search has no rounds of its own: a round is one measure() batch of next() proposals.
    for (let round = 0; s.trials.length < opts.total; round++) {
      const batch: Proposal<S>[] = [];
      for (let p: Proposal<S> | undefined; batch.length < Math.min(opts.batchSize, opts.total - s.trials.length) && (p = s.next());) batch.push(p);
      if (batch.length === 0) break;
      const scores = await opts.evaluate(
        batch.map((b) => b.config),
        round,
      );
      batch.forEach((b, i) => s.tell(b.config, scores[i] ?? NaN));
    }
    return { trials: s.trials, rejected: s.rejected };
  }
  while (s.trials.length < opts.total) {
    const round = s.round;
    const batch = s.propose(Math.min(opts.batchSize, opts.total - s.trials.length));
    if (batch.length === 0) break;
    s.record(
      batch,
      await opts.evaluate(
        batch.map((b) => b.config),
        round,
      ),
    );
  }
  return { trials: s.trials, rejected: s.rejected };
}

export interface SearchOptions<S extends KnobSpace> extends SearcherOptions<S> {
  /** Configurations to measure in all (initial ones included). */
  total: number;
  /** Configurations per round: one measure() batch each. */
  batchSize: number;
  /** Measures one round; resolves with one score per configuration, NaN for a failure. */
  evaluate: (configs: Config<S>[], round: number) => Promise<number[]>;
}

export interface SearchResult<S extends KnobSpace> {
  /** Every configuration measured, in measurement order. */
  trials: Trial<S>[];
  /** Distinct configurations drawn that `valid` refused. */
  rejected: number;
}

/** Trials with a score, best first. */
export function ranked<S extends KnobSpace>(trials: readonly Trial<S>[], higherIsBetter: boolean): Trial<S>[] {
  return trials.filter((t) => !Number.isNaN(t.score)).sort((a, b) => (higherIsBetter ? b.score - a.score : a.score - b.score));
}

/** Fixed-width text table: a header row and rows of cells, numbers right-aligned. */
export function formatTable(header: readonly string[], rows: readonly (readonly (string | number)[])[]): string {
  const cells = [header, ...rows].map((r) => r.map(String));
  const widths = header.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)));
  const numeric = header.map((_, i) => rows.every((r) => typeof r[i] === "number" || /^[-+]?[\d.,]+[a-z%×]*$/i.test(String(r[i] ?? ""))));
  return cells
    .map((r) =>
      r
        .map((c, i) => (numeric[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

/** Outcome counts, in a fixed order, for a one-line summary. */
/** "OK 31, COMPILE_ERROR 9": the outcomes that occurred, in `order`. */
export function outcomeLine(outcomes: readonly string[], order: readonly string[]): string {
  return Object.entries(countOutcomes(outcomes, order))
    .filter(([, n]) => n > 0)
    .map(([o, n]) => `${o} ${n}`)
    .join(", ");
}

export function countOutcomes(outcomes: readonly string[], order: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = Object.fromEntries(order.map((o) => [o, 0]));
  for (const o of outcomes) counts[o] = (counts[o] ?? 0) + 1;
  return counts;
}
