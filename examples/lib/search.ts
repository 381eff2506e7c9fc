/**
 * A small search over a knob space for the tuning examples: random sampling
 * for the first rounds, then a simple evolutionary step (mutate one or two
 * knobs of the best configurations so far), never the same configuration
 * twice. Each round is one batch for measure(); the caller turns a round's
 * configurations into candidates and hands back one score each.
 *
 * This is the shape of autotvm's tuners without the cost model: a knob space
 * (`define_knob` choices), a batch per round, the history guiding the next
 * batch.
 */

import { configKey, mutate, pick, randomConfig, seededRandom, type Config, type KnobSpace } from "./space.ts";

export { configKey, mutate, randomConfig, seededRandom, spaceSize } from "./space.ts";
export type { Config, KnobSpace } from "./space.ts";

export type TrialOrigin = "initial" | "random" | "mutation";

export interface Trial<S extends KnobSpace> {
  config: Config<S>;
  /** The metric; NaN when the configuration failed (did not compile, run or check). */
  score: number;
  round: number;
  origin: TrialOrigin;
}

/** How a Searcher draws: the knob space and its policy. */
export interface SearcherOptions<S extends KnobSpace> {
  space: S;
  /** Rounds drawn purely at random before evolution starts. Default 2. */
  randomRounds?: number;
  /** Parents of an evolutionary round: the best this many so far. Default 4. */
  elite?: number;
  /** Share of an evolutionary round still drawn at random, to keep exploring. Default 0.25. */
  explore?: number;
  seed: number;
  higherIsBetter: boolean;
  /** Measured first, in the first round (a baseline, the library's default schedule). */
  initial?: readonly Config<S>[];
  /** Configurations that cannot work are dropped before they are measured (and counted in `rejected`). */
  valid?: (config: Config<S>) => boolean;
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

const MAX_DRAWS_PER_SLOT = 2000;

/**
 * The search's state, one round at a time: propose() draws a round's
 * configurations (never one drawn before), record() takes their scores.
 * Several Searchers can share one measure() batch — two templates of one
 * operator competing for the same board, say.
 */
export class Searcher<S extends KnobSpace> {
  readonly trials: Trial<S>[] = [];
  private readonly random: () => number;
  private readonly seen = new Set<string>();
  private readonly refused = new Set<string>();
  private rounds = 0;

  constructor(private readonly opts: SearcherOptions<S>) {
    this.random = seededRandom(opts.seed);
  }

  /** Distinct configurations drawn that `valid` refused. */
  get rejected(): number {
    return this.refused.size;
  }

  /** Rounds proposed so far. */
  get round(): number {
    return this.rounds;
  }

  /** The best trial so far, if any scored. */
  best(): Trial<S> | undefined {
    return ranked(this.trials, this.opts.higherIsBetter)[0];
  }

  /** Up to `size` new configurations for the next round: fewer (or none) once the space runs dry. */
  propose(size: number): { config: Config<S>; origin: TrialOrigin }[] {
    const { opts, random } = this;
    const round = this.rounds++;
    const batch: { config: Config<S>; origin: TrialOrigin }[] = [];
    if (round === 0) {
      for (const c of opts.initial ?? []) {
        const key = configKey(c);
        if (this.seen.has(key) || batch.length >= size) continue;
        this.seen.add(key);
        batch.push({ config: { ...c }, origin: "initial" });
      }
    }
    const better = (a: number, b: number) => (opts.higherIsBetter ? a > b : a < b);
    const parents = this.trials
      .filter((t) => !Number.isNaN(t.score))
      .sort((a, b) => (better(a.score, b.score) ? -1 : better(b.score, a.score) ? 1 : 0))
      .slice(0, opts.elite ?? 4);
    const evolve = round >= (opts.randomRounds ?? 2) && parents.length > 0;
    while (batch.length < size) {
      const mutation = evolve && random() >= (opts.explore ?? 0.25);
      const c = this.draw(mutation ? () => mutate(pick(parents, random).config, opts.space, random) : () => randomConfig(opts.space, random));
      // Mutations of the elite may be exhausted before the space is: fall back to random draws.
      const chosen = c ?? (mutation ? this.draw(() => randomConfig(opts.space, random)) : undefined);
      if (!chosen) break;
      batch.push({ config: chosen, origin: c && mutation ? "mutation" : "random" });
    }
    return batch;
  }

  /** The scores of a proposed round, in its order (NaN: failed). */
  record(batch: readonly { config: Config<S>; origin: TrialOrigin }[], scores: readonly number[]): void {
    const round = this.rounds - 1;
    batch.forEach((b, i) => this.trials.push({ config: b.config, score: scores[i] ?? NaN, round, origin: b.origin }));
  }

  /** A configuration not drawn before, or undefined when the draws run dry. */
  private draw(make: () => Config<S>): Config<S> | undefined {
    for (let i = 0; i < MAX_DRAWS_PER_SLOT; i++) {
      const c = make();
      const key = configKey(c);
      if (this.seen.has(key) || this.refused.has(key)) continue;
      if (this.opts.valid && !this.opts.valid(c)) {
        this.refused.add(key);
        continue;
      }
      this.seen.add(key);
      return c;
    }
    return undefined;
  }
}

/** Runs the search to `total` measured configurations, or until no new valid configuration can be drawn. */
export async function search<S extends KnobSpace>(opts: SearchOptions<S>): Promise<SearchResult<S>> {
  const s = new Searcher(opts);
  while (s.trials.length < opts.total) {
    const round = s.round;
    const batch = s.propose(Math.min(opts.batchSize, opts.total - s.trials.length));
    if (batch.length === 0) break;
    s.record(batch, await opts.evaluate(batch.map((b) => b.config), round));
  }
  return { trials: s.trials, rejected: s.rejected };
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
  return cells.map((r) => r.map((c, i) => (numeric[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join("  ").trimEnd()).join("\n");
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
