/**
 * The asynchronous searcher (examples/lib/search.ts): one proposal at a time,
 * results in any order. It never proposes a configuration twice (nor one
 * `valid` refuses), ends when the space is exhausted, takes NaN and
 * out-of-order results, and — the issue's target — with the cost model it
 * reaches within 2 % of what 200 evolution trials find in a third of the
 * trials, on synthetic landscapes shaped like the CUDA templates' spaces
 * (tests/helpers/landscapes.ts), results returned out of order from 4 boards.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Searcher, configKey, resolveSearcherOptions, search, type Proposal, type SearcherOptions, type Strategy } from "../examples/lib/search.ts";
import { knobDistance, neighbours, seededRandom, type Config, type KnobSpace } from "../examples/lib/space.ts";
import { CONV_LIKE, GEMM_LIKE, bestOf, simulate, trialsToReach, type Landscape } from "./helpers/landscapes.ts";

const SMALL = { a: [1, 2, 3], b: [10, 20, 30, 40], c: ["x", "y"] } as const;
type Small = Config<typeof SMALL>;
/** Refuses a third of SMALL: 8 of its 24 configurations. */
const smallValid = (c: Small) => (SMALL.a.indexOf(c.a) + SMALL.b.indexOf(c.b)) % 3 !== 0;
const smallScore = (c: Small) => c.a * c.b + (c.c === "y" ? 1 : 0);

/** Proposes until the searcher runs dry, keeping up to `outstanding` proposals and telling them back in a seeded random order. */
function drain<S extends KnobSpace>(s: Searcher<S>, score: (c: Config<S>) => number, outstanding: number, seed: number): Proposal<S>[] {
  const random = seededRandom(seed);
  const all: Proposal<S>[] = [];
  const out: Proposal<S>[] = [];
  for (;;) {
    while (out.length < outstanding) {
      const p = s.next();
      if (!p) break;
      all.push(p);
      out.push(p);
    }
    if (out.length === 0) return all;
    const p = out.splice(Math.floor(random() * out.length), 1)[0]!;
    s.tell(p.config, score(p.config));
  }
}

describe("the searcher, one proposal at a time", () => {
  for (const strategy of ["evolution", "model"] as const satisfies readonly Strategy[]) {
    it(`${strategy}: proposes every valid configuration of a small space exactly once, never a refused one, then undefined`, () => {
      const s = new Searcher({ space: SMALL, seed: 3, higherIsBetter: true, strategy, valid: smallValid, randomFirst: 4, minTrain: 4 });
      const all = drain(s, smallScore, 5, 4);
      const keys = all.map((p) => configKey(p.config));
      assert.equal(new Set(keys).size, keys.length, "proposed twice");
      assert.equal(keys.length, 16);
      assert.ok(
        all.every((p) => smallValid(p.config)),
        "proposed a refused configuration",
      );
      assert.equal(s.rejected, 8, "every refused configuration met once");
      assert.equal(s.next(), undefined);
      assert.equal(s.trials.length, 16);
      assert.equal(s.best()!.score, 3 * 40 + 1);
      assert.equal(s.pending, 0);
    });
  }

  it("takes results in any order, NaN included; best() ignores failures; tell() refuses what is not outstanding", () => {
    const s = new Searcher({ space: SMALL, seed: 1, higherIsBetter: false });
    const batch = Array.from({ length: 6 }, () => s.next()!);
    assert.equal(s.pending, 6);
    const told = [...batch].reverse();
    told.forEach((p, i) => s.tell(p.config, i === 0 ? NaN : smallScore(p.config)));
    assert.deepEqual(
      s.trials.map((t) => configKey(t.config)),
      told.map((p) => configKey(p.config)),
      "trials in the order told",
    );
    assert.ok(Number.isNaN(s.trials[0]!.score));
    assert.equal(s.best()!.score, Math.min(...told.slice(1).map((p) => smallScore(p.config))), "lower is better; the failure is not the best");
    assert.equal(s.pending, 0);
    assert.throws(() => s.tell(batch[0]!.config, 1), /is not outstanding/);
    assert.throws(() => new Searcher({ space: SMALL, seed: 1, higherIsBetter: true }).tell(batch[0]!.config, 1), /was never proposed/);
    const fresh = s.next()!;
    assert.throws(() => s.tell(fresh.config, Infinity), /a failure is NaN/);
    s.tell({ ...fresh.config }, 5); // a copy of the config, its keys in another order, is the same configuration
    const reordered = s.next()!;
    s.tell(Object.fromEntries(Object.entries(reordered.config).reverse()) as Small, 6);
    assert.equal(s.pending, 0);
  });

  it("proposes the initial configurations first, in order, unchecked by valid, whatever the strategy", () => {
    const initial: Small[] = [
      { a: 3, b: 40, c: "x" },
      { a: 1, b: 10, c: "x" },
    ];
    assert.equal(smallValid(initial[1]!), false);
    for (const strategy of ["evolution", "model"] as const) {
      const s = new Searcher({ space: SMALL, seed: 1, higherIsBetter: true, strategy, valid: smallValid, initial });
      assert.deepEqual(
        [s.next()!, s.next()!],
        initial.map((config) => ({ config, origin: "initial" })),
      );
      assert.equal(s.next()!.origin, "random");
    }
  });

  it("evolution: random draws until randomFirst results, then mutations of the 4 best with a quarter still random", () => {
    const s = new Searcher({ space: GEMM_LIKE.space, seed: 5, higherIsBetter: true, valid: GEMM_LIKE.valid!, randomFirst: 20 });
    const origins: string[] = [];
    let farFromElite = 0;
    for (let i = 0; i < 220; i++) {
      const elite = s.trials
        .filter((t) => !Number.isNaN(t.score))
        .sort((x, y) => y.score - x.score)
        .slice(0, 4);
      const p = s.next()!;
      origins.push(p.origin);
      if (p.origin === "mutation" && !elite.some((e) => [1, 2].includes(knobDistance(e.config, p.config, Object.keys(GEMM_LIKE.space))))) farFromElite++;
      s.tell(p.config, GEMM_LIKE.score(p.config));
    }
    assert.ok(origins.slice(0, 20).every((o) => o === "random"));
    const mutations = origins.slice(20).filter((o) => o === "mutation").length / 200;
    assert.ok(mutations > 0.65 && mutations < 0.85, `mutation share ${mutations} (explore 0.25)`);
    assert.equal(farFromElite, 0, "a mutation changes one or two knobs of one of the 4 best at the time");
  });

  it("model: random until minTrain results; then refining, model and random picks; a burst between two fits stays two knobs apart", () => {
    const s = new Searcher({
      space: GEMM_LIKE.space,
      seed: 2,
      higherIsBetter: true,
      valid: GEMM_LIKE.valid!,
      strategy: "model",
      features: GEMM_LIKE.features!,
      minTrain: 16,
      refineShare: 0,
      explore: 0,
    });
    for (let i = 0; i < 16; i++) {
      const p = s.next()!;
      assert.equal(p.origin, "random");
      s.tell(p.config, GEMM_LIKE.score(p.config));
    }
    const burst = Array.from({ length: 8 }, () => s.next()!);
    assert.equal(s.modelFits, 1, "one fit for the burst");
    assert.ok(burst.every((p) => p.origin === "model"));
    const knobs = Object.keys(GEMM_LIKE.space);
    for (let i = 0; i < burst.length; i++)
      for (let j = i + 1; j < burst.length; j++)
        assert.ok(knobDistance(burst[i]!.config, burst[j]!.config, knobs) >= 2, `${configKey(burst[i]!.config)} next to ${configKey(burst[j]!.config)}`);

    const mixed = new Searcher({
      space: GEMM_LIKE.space,
      seed: 2,
      higherIsBetter: true,
      valid: GEMM_LIKE.valid!,
      strategy: "model",
      features: GEMM_LIKE.features!,
      minTrain: 16,
    });
    const counts: Record<string, number> = {};
    for (let i = 0; i < 216; i++) {
      const elite = mixed.trials
        .filter((t) => !Number.isNaN(t.score))
        .sort((x, y) => y.score - x.score)
        .slice(0, 4);
      const p = mixed.next()!;
      counts[p.origin] = (counts[p.origin] ?? 0) + 1;
      if (p.origin === "refine")
        assert.ok(
          elite.some((t) => [1, 2].includes(knobDistance(t.config, p.config, knobs))),
          "a refining step is a neighbour of one of the best",
        );
      mixed.tell(p.config, GEMM_LIKE.score(p.config));
    }
    // After the 16 random: ε = 0.1 random, then 0.7 of the rest refining (when the best's neighbours are not all known).
    assert.equal(counts.random! >= 16 + 10 && counts.random! <= 16 + 35, true, JSON.stringify(counts));
    assert.ok(counts.refine! > 100 && counts.model! > 30, JSON.stringify(counts));
  });

  it("is deterministic: the same seed and the same results give the same proposals", () => {
    const run = () => {
      const s = new Searcher({
        space: GEMM_LIKE.space,
        seed: 9,
        higherIsBetter: true,
        valid: GEMM_LIKE.valid!,
        strategy: "model",
        features: GEMM_LIKE.features!,
        minTrain: 8,
      });
      return simulate(s, GEMM_LIKE, { trials: 60, concurrency: 4, seed: 9 }).scores;
    };
    assert.deepEqual(run(), run());
  });

  it("validates its options", () => {
    const base: SearcherOptions<typeof SMALL> = { space: SMALL, seed: 1, higherIsBetter: true };
    for (const bad of [
      { explore: 1.5 },
      { refineShare: -0.1 },
      { minTrain: 1 },
      { elite: 0 },
      { retrainEvery: 0 },
      { poolSize: 2.5 },
      { strategy: "annealing" as Strategy },
    ]) {
      assert.throws(() => new Searcher({ ...base, ...bad }), RangeError, JSON.stringify(bad));
    }
    assert.equal(resolveSearcherOptions(base).explore, 0.25);
    assert.equal(resolveSearcherOptions({ ...base, strategy: "model" }).explore, 0.1);
  });

  it("search() with the model: rounds of next(), told back after each measure() batch", async () => {
    const rounds: number[] = [];
    const { trials } = await search({
      space: GEMM_LIKE.space,
      seed: 4,
      higherIsBetter: true,
      valid: GEMM_LIKE.valid!,
      strategy: "model",
      features: GEMM_LIKE.features!,
      minTrain: 8,
      total: 40,
      batchSize: 16,
      evaluate: async (configs, round) => {
        rounds.push(configs.length, round);
        return configs.map((c) => GEMM_LIKE.score(c));
      },
    });
    assert.deepEqual(rounds, [16, 0, 16, 1, 8, 2]);
    assert.equal(trials.length, 40);
    assert.ok(trials.slice(16).some((t) => t.origin === "refine" || t.origin === "model"));
  });

  it("neighbours(): every one-knob neighbour, the two-knob ones all or about maxPairs of them", () => {
    const c: Small = { a: 2, b: 20, c: "x" };
    const all = neighbours(c, SMALL, seededRandom(1), 1000);
    // One knob: 2 + 3 + 1; two knobs: 2·3 + 2·1 + 3·1.
    assert.equal(all.length, 6 + 11);
    assert.equal(new Set(all.map(configKey)).size, all.length);
    const keys = Object.keys(SMALL);
    assert.deepEqual(
      all.map((n) => knobDistance(c, n, keys)),
      [...Array(6).fill(1), ...Array(11).fill(2)],
    );
    const some = neighbours(c, SMALL, seededRandom(1), 5);
    assert.ok(some.length >= 6 && some.length < 17);
  });
});

/**
 * For each seed: evolution for 200 results, then the model until it is within
 * 2 % of evolution's best (given up at 100), both on 4 boards returning results
 * out of order. Trials to get there, per seed (Infinity: not within 100).
 */
function race<S extends KnobSpace>(landscape: Landscape<S>, seeds: readonly number[]): { model: number[]; evolution: number[] } {
  const common = { space: landscape.space, higherIsBetter: landscape.higherIsBetter, ...(landscape.valid ? { valid: landscape.valid } : {}) };
  const model: number[] = [];
  const evolution: number[] = [];
  for (const seed of seeds) {
    const evo = simulate(new Searcher({ ...common, seed, strategy: "evolution" }), landscape, { trials: 200, concurrency: 4, seed }).scores;
    const target = bestOf(evo, landscape.higherIsBetter);
    evolution.push(trialsToReach(evo, target, landscape.higherIsBetter, 0.02)!);
    const searcher = new Searcher({ ...common, seed, strategy: "model", ...(landscape.features ? { features: landscape.features } : {}) });
    const until = (s: number) => (landscape.higherIsBetter ? s >= target * 0.98 : s <= target * 1.02);
    const m = simulate(searcher, landscape, { trials: 100, concurrency: 4, seed, until }).scores;
    model.push(trialsToReach(m, target, landscape.higherIsBetter, 0.02) ?? Infinity);
  }
  return { model, evolution };
}

const median = (v: readonly number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;

function raceTest<S extends KnobSpace>(landscape: Landscape<S>): void {
  it(`${landscape.name}: within 2 % of evolution's 200-trial best in at most 66 trials, median of 3 seeds`, () => {
    const { model, evolution } = race(landscape, [1, 2, 3]);
    console.log(
      `# ${landscape.name}, 4 boards: trials to within 2 % of evolution's best of 200 — model ${model.join(", ")}; evolution itself ${evolution.join(", ")}`,
    );
    assert.ok(median(model) <= 66, `median ${median(model)} of ${model.join(", ")}`);
  });
}

describe("the model's search against evolution (the issue's target)", () => {
  // Over 40 seeds on 4 boards (bench/search-model.ts --seeds 40 --boards 4), single seeds made it within
  // 66 trials 78 % of the time on the GEMM-like landscape and 85 % on the conv-like one: a median of 3
  // random seeds passes 87 % and 94 % of the time. These 3 seeds are fixed, so the test is deterministic;
  // when a change to the search fails it, measure over many seeds with the bench before touching the
  // seeds or the landscapes.
  raceTest(GEMM_LIKE);
  raceTest(CONV_LIKE);
});
