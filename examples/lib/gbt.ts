/**
 * Gradient-boosted regression trees, small enough to read in one sitting:
 * squared error, shrinkage, depth-limited trees grown on histograms of the
 * features (every distinct value its own bin up to `maxBins`), L2-regularised
 * leaves, row subsampling from a seeded generator. The same inputs and seed
 * give the same model, bit for bit.
 *
 * Why not a library: on npm, ml-cart and ml-random-forest have no boosting;
 * ml-xgboost (1.1.2, about 1,500 downloads a month) still depends on
 * ml-matrix 5 where ml-matrix is at 6.15; decision-tree (1.0.0, about 3,500 a
 * month, on lodash) is a classifier first. None offers a seeded, rank-friendly
 * regression fit we could rely on, and what a tuner needs — a few hundred
 * rows, tens of features, a refit every few results — fits in these lines.
 *
 * A missing feature (NaN) sorts below every number: it falls in the first bin
 * while training and goes left at every split when predicting (`!(x > cut)`).
 */
import { seededRandom } from "./space.ts";

/** Rows of features, row-major: feature `j` of row `i` is `data[i * cols + j]`. */
export interface FeatureMatrix {
  readonly rows: number;
  readonly cols: number;
  readonly data: Float64Array;
}

export interface GbtOptions {
  /** Boosting rounds: one tree each. */
  trees?: number;
  /** Splits from the root to a leaf, at most. */
  depth?: number;
  /** Shrinkage: each tree adds this share of its fit. */
  learningRate?: number;
  /** Share of the rows each tree is grown on (drawn without replacement). */
  subsample?: number;
  /** Rows a leaf needs at least. */
  minLeaf?: number;
  /** L2 penalty on leaf values, in rows: a leaf of n rows is shrunk by n / (n + lambda). */
  lambda?: number;
  /** Bins per feature, at most 256; features with more distinct values are cut at quantiles. */
  maxBins?: number;
  seed?: number;
}

export type ResolvedGbtOptions = Readonly<Required<GbtOptions>>;

export const DEFAULT_GBT_TREES = 100;
export const DEFAULT_GBT_DEPTH = 4;
export const DEFAULT_GBT_LEARNING_RATE = 0.15;
export const DEFAULT_GBT_SUBSAMPLE = 0.8;
export const DEFAULT_GBT_MIN_LEAF = 2;
export const DEFAULT_GBT_LAMBDA = 1;
export const DEFAULT_GBT_MAX_BINS = 64;

/** Applies the defaults; throws RangeError for an option out of range. */
export function resolveGbtOptions(o: GbtOptions = {}): ResolvedGbtOptions {
  const r = {
    trees: o.trees ?? DEFAULT_GBT_TREES,
    depth: o.depth ?? DEFAULT_GBT_DEPTH,
    learningRate: o.learningRate ?? DEFAULT_GBT_LEARNING_RATE,
    subsample: o.subsample ?? DEFAULT_GBT_SUBSAMPLE,
    minLeaf: o.minLeaf ?? DEFAULT_GBT_MIN_LEAF,
    lambda: o.lambda ?? DEFAULT_GBT_LAMBDA,
    maxBins: o.maxBins ?? DEFAULT_GBT_MAX_BINS,
    seed: o.seed ?? 0,
  };
  const check = (ok: boolean, what: string) => {
    if (!ok) throw new RangeError(`GBT option ${what}, got ${JSON.stringify(o)}`);
  };
  check(Number.isInteger(r.trees) && r.trees >= 0, "trees must be an integer ≥ 0");
  check(Number.isInteger(r.depth) && r.depth >= 1 && r.depth <= 12, "depth must be an integer in [1, 12]");
  check(r.learningRate > 0 && r.learningRate <= 1, "learningRate must be in (0, 1]");
  check(r.subsample > 0 && r.subsample <= 1, "subsample must be in (0, 1]");
  check(Number.isInteger(r.minLeaf) && r.minLeaf >= 1, "minLeaf must be an integer ≥ 1");
  check(r.lambda >= 0, "lambda must be ≥ 0");
  check(Number.isInteger(r.maxBins) && r.maxBins >= 2 && r.maxBins <= 256, "maxBins must be an integer in [2, 256]");
  return r;
}

/**
 * Where to cut between two neighbouring distinct values `a < b`: a number
 * `c` with `a <= c < b`, so that `!(x > c)` sends a left and b right. The
 * midpoint, so that a value between the two (never seen in training) goes to
 * the nearer side.
 */
function cutBetween(a: number, b: number): number {
  if (a === -Infinity) return -Infinity;
  if (b === Infinity) return a;
  const mid = a + (b - a) / 2;
  return mid < b ? mid : a;
}

/** The cuts of one feature: increasing, at most maxBins − 1 of them. */
function cutsOf(values: Float64Array, maxBins: number): Float64Array {
  const sorted = values.slice().sort();
  const distinct: number[] = [];
  for (const v of sorted) if (distinct.length === 0 || v !== distinct[distinct.length - 1]) distinct.push(v);
  const u = distinct.length;
  if (u <= 1) return new Float64Array(0);
  const cuts: number[] = [];
  if (u <= maxBins) {
    for (let j = 0; j + 1 < u; j++) cuts.push(cutBetween(distinct[j]!, distinct[j + 1]!));
  } else {
    for (let k = 1; k < maxBins; k++) {
      const j = Math.floor((k * u) / maxBins) - 1;
      const c = cutBetween(distinct[j]!, distinct[j + 1]!);
      if (cuts.length === 0 || c > cuts[cuts.length - 1]!) cuts.push(c);
    }
  }
  return Float64Array.from(cuts);
}

/** The number of cuts below `v`: its bin. */
function binOf(cuts: Float64Array, v: number): number {
  let lo = 0;
  let hi = cuts.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (cuts[mid]! < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * A fitted ensemble. Nodes of all trees live in flat typed arrays: `feature`
 * is −1 at a leaf, whose `value` is added to the prediction; elsewhere a row
 * goes to `left` when `!(x[feature] > cut)`, else to `right`.
 */
export class Gbt {
  private constructor(
    /** The prediction before any tree: the mean target. */
    readonly base: number,
    readonly cols: number,
    private readonly roots: Int32Array,
    private readonly feature: Int32Array,
    private readonly cut: Float64Array,
    private readonly left: Int32Array,
    private readonly right: Int32Array,
    private readonly value: Float64Array,
  ) {}

  get treeCount(): number {
    return this.roots.length;
  }

  /** Splits in the ensemble, as [feature, cut] pairs, in tree order (for tests and for reading a model). */
  splits(): [number, number][] {
    const out: [number, number][] = [];
    for (let i = 0; i < this.feature.length; i++) if (this.feature[i]! >= 0) out.push([this.feature[i]!, this.cut[i]!]);
    return out;
  }

  /** One prediction per row of `x`. */
  predict(x: FeatureMatrix): Float64Array {
    if (x.cols !== this.cols) throw new RangeError(`the model was fitted on ${this.cols} features, got rows of ${x.cols}`);
    const { roots, feature, cut, left, right, value, cols } = this;
    const out = new Float64Array(x.rows).fill(this.base);
    const data = x.data;
    for (let i = 0; i < x.rows; i++) {
      const row = i * cols;
      let sum = out[i]!;
      for (let t = 0; t < roots.length; t++) {
        let n = roots[t]!;
        for (let f = feature[n]!; f >= 0; f = feature[n]!) n = data[row + f]! > cut[n]! ? right[n]! : left[n]!;
        sum += value[n]!;
      }
      out[i] = sum;
    }
    return out;
  }

  /** Fits `trees` trees to targets `y` (finite numbers), one per row of `x`. */
  static fit(x: FeatureMatrix, y: ArrayLike<number>, options: GbtOptions = {}): Gbt {
    const o = resolveGbtOptions(options);
    const { rows: n, cols } = x;
    if (y.length !== n) throw new RangeError(`${n} rows but ${y.length} targets`);
    for (let i = 0; i < n; i++) if (!Number.isFinite(y[i]!)) throw new RangeError(`target ${i} is ${y[i]}: targets must be finite`);
    if (x.data.length !== n * cols) throw new RangeError(`a ${n}×${cols} matrix needs ${n * cols} values, got ${x.data.length}`);
    const t = new Grower(x, y, o);
    for (let k = 0; k < o.trees && n > 0; k++) t.addTree();
    const k = t.nodes;
    return new Gbt(
      t.base,
      cols,
      Int32Array.from(t.roots),
      t.feature.slice(0, k),
      t.cutAt.slice(0, k),
      t.left.slice(0, k),
      t.right.slice(0, k),
      t.value.slice(0, k),
    );
  }
}

/**
 * The state of one fit. Bins are row-major (a row's features side by side),
 * and a node's histogram holds every feature's bins end to end, so one pass
 * over a node's rows fills all of them. Only the smaller child's histogram is
 * counted; the larger one is the parent's minus it.
 */
class Grower {
  readonly base: number;
  readonly roots: number[] = [];
  /** Nodes so far; the node arrays below have room for more and grow by doubling. */
  nodes = 0;
  feature = new Int32Array(64);
  cutAt = new Float64Array(64);
  binAt = new Int32Array(64);
  left = new Int32Array(64);
  right = new Int32Array(64);
  value = new Float64Array(64);
  private readonly y: Float64Array;
  private readonly n: number;
  private readonly cols: number;
  private readonly bins: Uint8Array;
  private readonly cuts: Float64Array[];
  /** Where feature f's bins start in a histogram, and how many it has. */
  private readonly binStart: Int32Array;
  private readonly binCount: Int32Array;
  private readonly pred: Float64Array;
  private readonly residual: Float64Array;
  private readonly all: Int32Array;
  private readonly idx: Int32Array;
  /** Histograms per depth, two per depth (the children of the node being split). */
  private readonly sums: Float64Array[][] = [];
  private readonly counts: Int32Array[][] = [];
  private readonly random: () => number;
  private readonly best = { feature: -1, bin: -1 };

  constructor(
    x: FeatureMatrix,
    y: ArrayLike<number>,
    private readonly o: ResolvedGbtOptions,
  ) {
    const { rows: n, cols } = x;
    this.y = Float64Array.from(y);
    this.n = n;
    this.cols = cols;
    this.cuts = [];
    this.bins = new Uint8Array(n * cols);
    this.binStart = new Int32Array(cols);
    this.binCount = new Int32Array(cols);
    const column = new Float64Array(n);
    let total = 0;
    for (let f = 0; f < cols; f++) {
      for (let i = 0; i < n; i++) {
        const v = x.data[i * cols + f]!;
        column[i] = Number.isNaN(v) ? -Infinity : v;
      }
      const c = cutsOf(column, o.maxBins);
      this.cuts.push(c);
      for (let i = 0; i < n; i++) this.bins[i * cols + f] = binOf(c, column[i]!);
      this.binStart[f] = total;
      this.binCount[f] = c.length + 1;
      total += c.length + 1;
    }
    for (let d = 0; d < o.depth; d++) {
      this.sums.push([new Float64Array(total), new Float64Array(total)]);
      this.counts.push([new Int32Array(total), new Int32Array(total)]);
    }
    let base = 0;
    for (let i = 0; i < n; i++) base += y[i]!;
    this.base = n > 0 ? base / n : 0;
    this.pred = new Float64Array(n).fill(this.base);
    this.residual = new Float64Array(n);
    this.all = Int32Array.from({ length: n }, (_, i) => i);
    this.idx = new Int32Array(Math.max(1, Math.round(o.subsample * n)));
    this.random = seededRandom(o.seed);
  }

  addTree(): void {
    const { n, y, pred, residual, all, idx, bins, cols } = this;
    for (let i = 0; i < n; i++) residual[i] = y[i]! - pred[i]!;
    const m = Math.min(idx.length, n);
    // A partial Fisher–Yates shuffle draws the tree's rows without replacement.
    if (m < n) {
      for (let k = 0; k < m; k++) {
        const j = k + Math.floor(this.random() * (n - k));
        const tmp = all[k]!;
        all[k] = all[j]!;
        all[j] = tmp;
      }
    }
    idx.set(all.subarray(0, m));
    let rootSums: Float64Array | undefined;
    let rootCounts: Int32Array | undefined;
    if (this.o.depth > 0 && m >= 2 * this.o.minLeaf) {
      rootSums = this.sums[0]![0]!;
      rootCounts = this.counts[0]![0]!;
      histogram(bins, cols, this.binStart, idx, 0, m, residual, rootSums, rootCounts);
    }
    const root = this.grow(0, m, 0, rootSums, rootCounts);
    this.roots.push(root);
    // Read after grow(): growing may have moved the node arrays.
    const { feature, binAt, left, right, value } = this;
    for (let i = 0; i < n; i++) {
      let node = root;
      const row = i * cols;
      while (feature[node]! >= 0) node = bins[row + feature[node]!]! <= binAt[node]! ? left[node]! : right[node]!;
      pred[i]! += value[node]!;
    }
  }

  /** A new leaf of `value`; returns its index. */
  private addNode(value: number): number {
    if (this.nodes === this.feature.length) {
      const more = <T extends Int32Array | Float64Array>(a: T): T => {
        const b = new (a.constructor as new (n: number) => T)(a.length * 2);
        b.set(a);
        return b;
      };
      this.feature = more(this.feature);
      this.cutAt = more(this.cutAt);
      this.binAt = more(this.binAt);
      this.left = more(this.left);
      this.right = more(this.right);
      this.value = more(this.value);
    }
    const node = this.nodes++;
    this.feature[node] = -1;
    this.left[node] = -1;
    this.right[node] = -1;
    this.value[node] = value;
    return node;
  }

  /** Grows the node of rows idx[lo, hi) at `depth`, given its histogram unless it must be a leaf; returns its index. */
  private grow(lo: number, hi: number, depth: number, sums: Float64Array | undefined, counts: Int32Array | undefined): number {
    const { idx, residual, o } = this;
    const size = hi - lo;
    let g = 0;
    for (let k = lo; k < hi; k++) g += residual[idx[k]!]!;
    const node = this.addNode((o.learningRate * g) / (size + o.lambda));
    if (depth >= o.depth || size < 2 * o.minLeaf || !sums || !counts) return node;
    if (!bestSplit(sums, counts, this.binStart, this.binCount, g, size, o.lambda, o.minLeaf, this.best)) return node;
    const f = this.best.feature;
    const b = this.best.bin;

    // Partition idx[lo, hi) in place: rows in bins ≤ b first.
    const { bins, cols } = this;
    let mid = lo;
    for (let k = lo; k < hi; k++) {
      const i = idx[k]!;
      if (bins[i * cols + f]! <= b) {
        idx[k] = idx[mid]!;
        idx[mid++] = i;
      }
    }
    this.feature[node] = f;
    this.binAt[node] = b;
    this.cutAt[node] = this.cuts[f]![b]!;

    const child = depth + 1;
    let ls: Float64Array | undefined;
    let lc: Int32Array | undefined;
    let rs: Float64Array | undefined;
    let rc: Int32Array | undefined;
    const leftGrows = child < o.depth && mid - lo >= 2 * o.minLeaf;
    const rightGrows = child < o.depth && hi - mid >= 2 * o.minLeaf;
    if (leftGrows || rightGrows) {
      const [s0, s1] = this.sums[child]!;
      const [c0, c1] = this.counts[child]!;
      // Count the smaller side; the larger is the parent's histogram minus it.
      if (mid - lo <= hi - mid) {
        histogram(bins, cols, this.binStart, idx, lo, mid, residual, s0!, c0!);
        subtract(sums, counts, s0!, c0!, s1!, c1!);
      } else {
        histogram(bins, cols, this.binStart, idx, mid, hi, residual, s1!, c1!);
        subtract(sums, counts, s1!, c1!, s0!, c0!);
      }
      [ls, lc, rs, rc] = [s0, c0, s1, c1];
    }
    const l = this.grow(lo, mid, child, leftGrows ? ls : undefined, leftGrows ? lc : undefined);
    const r = this.grow(mid, hi, child, rightGrows ? rs : undefined, rightGrows ? rc : undefined);
    this.left[node] = l;
    this.right[node] = r;
    return node;
  }
}

/** Every feature's histogram of residual sums and row counts over rows idx[lo, hi). */
function histogram(
  bins: Uint8Array,
  cols: number,
  binStart: Int32Array,
  idx: Int32Array,
  lo: number,
  hi: number,
  residual: Float64Array,
  sums: Float64Array,
  counts: Int32Array,
): void {
  sums.fill(0);
  counts.fill(0);
  for (let k = lo; k < hi; k++) {
    const i = idx[k]!;
    const r = residual[i]!;
    const row = i * cols;
    for (let f = 0; f < cols; f++) {
      const h = binStart[f]! + bins[row + f]!;
      sums[h]! += r;
      counts[h]!++;
    }
  }
}

/** out = parent − part, bin by bin. */
function subtract(
  parentSums: Float64Array,
  parentCounts: Int32Array,
  partSums: Float64Array,
  partCounts: Int32Array,
  outSums: Float64Array,
  outCounts: Int32Array,
): void {
  for (let h = 0; h < parentSums.length; h++) {
    outSums[h] = parentSums[h]! - partSums[h]!;
    outCounts[h] = parentCounts[h]! - partCounts[h]!;
  }
}

/**
 * The split of the largest gain in squared error (with the L2 penalty
 * `lambda`) that leaves at least `minLeaf` rows on each side, into `out`;
 * false when no split gains anything. Ties go to the first feature and bin.
 */
function bestSplit(
  sums: Float64Array,
  counts: Int32Array,
  binStart: Int32Array,
  binCount: Int32Array,
  g: number,
  size: number,
  lambda: number,
  minLeaf: number,
  out: { feature: number; bin: number },
): boolean {
  const parentScore = (g * g) / (size + lambda);
  let bestGain = 1e-12 * Math.max(1, parentScore);
  out.feature = -1;
  for (let f = 0; f < binStart.length; f++) {
    const start = binStart[f]!;
    const nb = binCount[f]!;
    let gl = 0;
    let nl = 0;
    for (let b = 0; b < nb - 1; b++) {
      gl += sums[start + b]!;
      nl += counts[start + b]!;
      if (nl < minLeaf) continue;
      const nr = size - nl;
      if (nr < minLeaf) break;
      const gr = g - gl;
      const gain = (gl * gl) / (nl + lambda) + (gr * gr) / (nr + lambda) - parentScore;
      if (gain > bestGain) {
        bestGain = gain;
        out.feature = f;
        out.bin = b;
      }
    }
  }
  return out.feature >= 0;
}
