/**
 * The cost model of the model-guided search (examples/lib/gbt.ts,
 * examples/lib/cost-model.ts): the boosted trees split where the data says,
 * fit known functions well enough to rank held-out points, and give the same
 * model for the same seed; configurations become the features the module
 * comment promises; failures and both objectives land where they should.
 * The fit and scoring times of the issue's budget are printed (and bounded
 * loosely: this machine is shared, the figures are in bench/search-model.ts).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CostModel, Featurizer, trainingTargets } from "../examples/lib/cost-model.ts";
import { Gbt, resolveGbtOptions, type FeatureMatrix } from "../examples/lib/gbt.ts";
import { configAt, seededRandom, spaceSize, type Config } from "../examples/lib/space.ts";
import { GEMM_LIKE, GEMM_LIKE_SPACE } from "./helpers/landscapes.ts";

function matrix(rows: number[][]): FeatureMatrix {
  const cols = rows[0]?.length ?? 0;
  return { rows: rows.length, cols, data: Float64Array.from(rows.flat()) };
}

/** `n` rows of `cols` uniform features in [0, 3) and fn of each. */
function sample(n: number, cols: number, fn: (x: number[]) => number, seed: number): { x: FeatureMatrix; y: Float64Array } {
  const random = seededRandom(seed);
  const rows = Array.from({ length: n }, () => Array.from({ length: cols }, () => random() * 3));
  return { x: matrix(rows), y: Float64Array.from(rows, fn) };
}

function rSquared(y: ArrayLike<number>, p: ArrayLike<number>): number {
  let mean = 0;
  for (let i = 0; i < y.length; i++) mean += y[i]!;
  mean /= y.length;
  let total = 0;
  let residual = 0;
  for (let i = 0; i < y.length; i++) {
    total += (y[i]! - mean) ** 2;
    residual += (y[i]! - p[i]!) ** 2;
  }
  return 1 - residual / total;
}

/** Spearman's rank correlation (ties take their average rank). */
function spearman(a: ArrayLike<number>, b: ArrayLike<number>): number {
  const ranks = (v: ArrayLike<number>) => {
    const order = Array.from({ length: v.length }, (_, i) => i).sort((i, j) => v[i]! - v[j]!);
    const r = new Float64Array(v.length);
    for (let s = 0; s < order.length;) {
      let e = s;
      while (e + 1 < order.length && v[order[e + 1]!] === v[order[s]!]) e++;
      for (let k = s; k <= e; k++) r[order[k]!] = (s + e) / 2;
      s = e + 1;
    }
    return r;
  };
  return rSquaredFree(ranks(a), ranks(b));
}

function rSquaredFree(x: Float64Array, y: Float64Array): number {
  const n = x.length;
  const mx = x.reduce((s, v) => s + v, 0) / n;
  const my = y.reduce((s, v) => s + v, 0) / n;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < n; i++) {
    sxy += (x[i]! - mx) * (y[i]! - my);
    sxx += (x[i]! - mx) ** 2;
    syy += (y[i]! - my) ** 2;
  }
  return sxy / Math.sqrt(sxx * syy);
}

describe("gradient-boosted trees", () => {
  it("a stump splits the informative feature at the midpoint between the two groups, and predicts each group's mean", () => {
    // Feature 0 decides y; feature 1 is noise that correlates less.
    const rows = Array.from({ length: 10 }, (_, i) => [i, (i * 7) % 10]);
    const y = rows.map(([a]) => (a! < 4 ? 1 : 5));
    const m = Gbt.fit(matrix(rows), y, { trees: 1, depth: 1, learningRate: 1, lambda: 0, subsample: 1, minLeaf: 1 });
    assert.deepEqual(m.splits(), [[0, 3.5]]);
    assert.deepEqual(
      [
        ...m.predict(
          matrix([
            [3, 0],
            [3.49, 9],
            [3.51, 0],
            [100, 0],
          ]),
        ),
      ],
      [1, 1, 5, 5],
    );
  });

  it("sends a missing feature (NaN) left, with the smallest values, in training and in prediction alike", () => {
    const rows = [[NaN], [NaN], [1], [2], [3], [4]];
    const y = [0, 0, 0, 0, 10, 10];
    const m = Gbt.fit(matrix(rows), y, { trees: 1, depth: 1, learningRate: 1, lambda: 0, subsample: 1, minLeaf: 1 });
    assert.deepEqual(m.splits(), [[0, 2.5]]);
    assert.deepEqual([...m.predict(matrix([[NaN], [2], [3]]))], [0, 0, 10]);
  });

  it("leaves a leaf alone when no split leaves minLeaf rows on both sides, and shrinks leaves by lambda", () => {
    const m = Gbt.fit(matrix([[0], [1], [2]]), [0, 0, 3], { trees: 1, depth: 3, learningRate: 1, lambda: 0, subsample: 1, minLeaf: 2 });
    assert.deepEqual(m.splits(), [], "3 rows cannot make two leaves of 2");
    const shrunk = Gbt.fit(matrix([[0], [1], [2], [3]]), [0, 0, 4, 4], { trees: 1, depth: 1, learningRate: 1, lambda: 2, subsample: 1, minLeaf: 1 });
    // Mean 2; each leaf holds residuals ±2 over 2 rows: 2 · 2 / (2 + 2) = 1 from the mean.
    assert.deepEqual([...shrunk.predict(matrix([[0], [3]]))], [1, 3]);
  });

  it("fits a smooth function with an interaction: held-out R² above 0.95 (stumps, which cannot model x1·x2, reach about 0.84)", () => {
    const f = (x: number[]) => Math.sin(x[0]!) + x[1]! * x[2]!;
    const train = sample(600, 5, f, 1);
    const test = sample(2000, 5, f, 2);
    const r2 = rSquared(test.y, Gbt.fit(train.x, train.y, { seed: 1 }).predict(test.x));
    const stumps = rSquared(test.y, Gbt.fit(train.x, train.y, { seed: 1, depth: 1 }).predict(test.x));
    console.log(`# sin(x0) + x1·x2, 600 rows: held-out R² ${r2.toFixed(3)} (depth 1: ${stumps.toFixed(3)})`);
    assert.ok(r2 > 0.95, `R² ${r2}`);
    assert.ok(stumps < r2 - 0.05, "depth matters for interactions");
  });

  it("ranks held-out points of a product of terms: Spearman above 0.95 from 300 rows", () => {
    const f = (x: number[]) => (x[0]! * x[1]!) / (1 + Math.abs(x[2]! - 1.5)) + 0.1 * x[3]!;
    const train = sample(300, 6, f, 3);
    const test = sample(2000, 6, f, 4);
    const rho = spearman(test.y, Gbt.fit(train.x, train.y, { seed: 3 }).predict(test.x));
    console.log(`# product of terms, 300 rows: held-out Spearman ${rho.toFixed(3)}`);
    assert.ok(rho > 0.95, `Spearman ${rho}`);
  });

  it("is deterministic: the same data and seed give the same predictions bit for bit; another seed, other row samples", () => {
    const f = (x: number[]) => x[0]! - x[1]! * x[2]!;
    const { x, y } = sample(200, 4, f, 5);
    const test = sample(100, 4, f, 6).x;
    const a = Gbt.fit(x, y, { seed: 7 }).predict(test);
    assert.deepEqual(Gbt.fit(x, y, { seed: 7 }).predict(test), a);
    assert.notDeepEqual(Gbt.fit(x, y, { seed: 8 }).predict(test), a);
    assert.deepEqual(
      Gbt.fit(x, y, { seed: 7, subsample: 1 }).predict(test),
      Gbt.fit(x, y, { seed: 8, subsample: 1 }).predict(test),
      "no sampling, no randomness",
    );
  });

  it("refuses what it cannot fit: non-finite targets, mismatched shapes, options out of range", () => {
    assert.throws(() => Gbt.fit(matrix([[1], [2]]), [1, NaN]), /target 1 is NaN/);
    assert.throws(() => Gbt.fit(matrix([[1], [2]]), [1]), /2 rows but 1 targets/);
    assert.throws(() => Gbt.fit(matrix([[1], [2]]), [1, 2]).predict(matrix([[1, 2]])), /fitted on 1 features/);
    for (const bad of [{ depth: 0 }, { learningRate: 0 }, { subsample: 1.5 }, { maxBins: 300 }, { trees: -1 }, { minLeaf: 0 }]) {
      assert.throws(() => resolveGbtOptions(bad), RangeError, JSON.stringify(bad));
    }
  });

  it("fits 1,000 rows × 30 features with 100 trees, and scores 5,000 rows, within the issue's budget (printed; bounded at 10×)", () => {
    const f = (x: number[]) => x.slice(0, 6).reduce((p, v) => p * (1 + v), 1);
    const { x, y } = sample(1000, 30, f, 9);
    const score = sample(5000, 30, f, 10).x;
    let fitMs = Infinity;
    let scoreMs = Infinity;
    // The best of five: the first runs are the JIT's, and other engineers share these two cores.
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      const m = Gbt.fit(x, y, { seed: i });
      const t1 = performance.now();
      m.predict(score);
      const t2 = performance.now();
      fitMs = Math.min(fitMs, t1 - t0);
      scoreMs = Math.min(scoreMs, t2 - t1);
    }
    console.log(`# 1,000 × 30, 100 trees of depth 4: fit ${fitMs.toFixed(1)} ms (budget 100); 5,000 rows scored in ${scoreMs.toFixed(1)} ms (budget 50)`);
    assert.ok(fitMs < 1000, `fit ${fitMs} ms`);
    assert.ok(scoreMs < 500, `score ${scoreMs} ms`);
  });
});

describe("features of a configuration", () => {
  it("numbers and their log2, strings as their index, splits as their factors, then the caller's", () => {
    const space = { tile: ["1x4", "2x2", "4x1"], n: [8, 16], shift: [-1, 0, 1], layout: ["NCHW", "NHWC"] } as const;
    const f = new Featurizer(space, (c) => ({ threads: Number(c.tile.split("x")[1]) * c.n }));
    const x = f.encode([
      { tile: "2x2", n: 16, shift: -1, layout: "NHWC" },
      { tile: "4x1", n: 8, shift: 1, layout: "NCHW" },
    ]);
    assert.deepEqual(f.names, ["tile index", "tile[0]", "log2 tile[0]", "tile[1]", "log2 tile[1]", "n", "log2 n", "shift", "layout index", "threads"]);
    assert.deepEqual([...x.data], [1, 2, 1, 2, 1, 16, 4, -1, 1, 32, 2, 4, 2, 1, 0, 8, 3, 1, 0, 8]);
    assert.equal(x.cols, 10);
    assert.throws(
      () => f.encode([{ tile: "8x8", n: 8, shift: 0, layout: "NCHW" } as unknown as Config<typeof space>]),
      /tile=8x8 is not one of the knob's choices/,
    );
  });

  it("a derived feature missing from a later configuration is NaN", () => {
    const space = { a: [1, 2] } as const;
    const f = new Featurizer(space, (c): Record<string, number> => (c.a === 1 ? { x: 5 } : {}));
    assert.deepEqual([...f.encode([{ a: 1 }, { a: 2 }]).data], [1, 0, 5, 2, 1, NaN]);
  });
});

describe("training targets", () => {
  it("rank: 0 for the worst to 1 for the best, ties averaged, failures half a spread below the worst", () => {
    assert.deepEqual([...trainingTargets([10, 30, 20, NaN, 20], true, "rank", 0.5)], [0, 1, 0.5, -0.5, 0.5]);
    assert.deepEqual([...trainingTargets([10, 30, 20, NaN], false, "rank", 0.5)], [1, 0, 0.5, -0.5], "lower is better: 10 is best");
  });

  it("log: the log of the score, negated when lower is better; failures below the worst by penalty × spread", () => {
    const t = trainingTargets([Math.E, Math.E ** 3, NaN], true, "log", 0.5);
    assert.deepEqual(
      [...t].map((v) => Number(v.toFixed(12))),
      [1, 3, 0],
    );
    assert.deepEqual(
      [...trainingTargets([Math.E, Math.E ** 3], false, "log", 0.5)].map((v) => Number(v.toFixed(12))),
      [-1, -3],
    );
  });

  it("all failures: every target the same (the model then ranks nothing above anything)", () => {
    assert.deepEqual([...trainingTargets([NaN, NaN], true, "rank", 0.5)], [0, 0]);
  });
});

describe("the cost model", () => {
  it("ranks the GEMM-like landscape's configurations after 300 random results (Spearman above 0.9 on the ones that run), and learns where they fail", () => {
    const all = Array.from({ length: spaceSize(GEMM_LIKE_SPACE) }, (_, i) => configAt(GEMM_LIKE_SPACE, i)).filter((c) => GEMM_LIKE.valid!(c));
    const random = seededRandom(11);
    const train = Array.from({ length: 300 }, () => all[Math.floor(random() * all.length)]!).map((config) => ({ config, score: GEMM_LIKE.score(config) }));
    const test = Array.from({ length: 3000 }, () => all[Math.floor(random() * all.length)]!);
    const m = new CostModel({ space: GEMM_LIKE_SPACE, higherIsBetter: true, features: GEMM_LIKE.features! });
    assert.throws(() => m.predict(test), /before fit/);
    m.fit(train, 1);
    const p = m.predict(test);
    const scores = test.map((c) => GEMM_LIKE.score(c));
    const ok = scores.map((s, i) => [s, p[i]!] as const).filter(([s]) => !Number.isNaN(s));
    const rho = spearman(
      ok.map(([s]) => s),
      ok.map(([, q]) => q),
    );
    // Failures should rank below most of what runs: the share of (failure, success) pairs ordered right.
    const failed = scores.flatMap((s, i) => (Number.isNaN(s) ? [p[i]!] : []));
    const below = failed.reduce((n, f) => n + ok.filter(([, q]) => q > f).length, 0) / (failed.length * ok.length);
    console.log(
      `# GEMM-like, 300 random results: Spearman ${rho.toFixed(3)} on ${ok.length} held-out that run; failures ranked below ${(below * 100).toFixed(0)} % of those`,
    );
    assert.ok(rho > 0.9, `Spearman ${rho}`);
    assert.ok(below > 0.9, `failures below ${below} of successes`);
  });
});
