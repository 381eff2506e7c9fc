/**
 * Synthetic tuning landscapes for the search tests and bench/search-model.ts:
 * knob spaces shaped like the CUDA templates' (tile sizes that multiply into
 * threads, shared memory and registers), a score that is a product of
 * interacting terms with a narrow good region, and hardware cliffs where a
 * configuration fails (NaN) — a launch over the thread or shared-memory
 * limit, a kernel that needs more registers than a thread has. No noise
 * between calls: a configuration's score is a pure function of it (with a
 * fixed ±2 % "measurement" jitter hashed from its key), so a test that fails
 * fails the same way every time.
 */
import type { Config, KnobSpace } from "../../examples/lib/space.ts";

/** Methods, not function properties, so that any landscape is a Landscape<KnobSpace> (methods are bivariant). */
export interface Landscape<S extends KnobSpace> {
  name: string;
  space: S;
  higherIsBetter: boolean;
  /** The score (NaN: failed on the board). */
  score(c: Config<S>): number;
  /** What a template's rules refuse before compiling. */
  valid?(c: Config<S>): boolean;
  /** Features a template can compute without compiling. */
  features?(c: Config<S>): Record<string, number>;
}

/** Both landscapes, for loops over them. */
export function landscapes(): Landscape<KnobSpace>[] {
  return [GEMM_LIKE, CONV_LIKE];
}

/** FNV-1a of a string, as a fraction in [0, 1): a fixed jitter per configuration. */
function hash01(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return (h >>> 0) / 4294967296;
}

const keyOf = (c: Readonly<Record<string, unknown>>) =>
  Object.entries(c)
    .map(([k, v]) => `${k}=${v}`)
    .join(",");

export const GEMM_LIKE_SPACE = {
  BM: [16, 32, 64, 128, 256],
  BN: [16, 32, 64, 128, 256],
  BK: [4, 8, 16, 32, 64],
  TM: [1, 2, 4, 8, 16],
  TN: [1, 2, 4, 8, 16],
  vec: [1, 2, 4],
  stages: [1, 2, 3],
  unroll: [0, 1],
} as const;

type GemmLike = Config<typeof GEMM_LIKE_SPACE>;

const gemmThreads = (c: GemmLike) => (c.BM / c.TM) * (c.BN / c.TN);
const gemmShared = (c: GemmLike) => c.stages * c.BK * (c.BM + c.BN) * 4;
const gemmRegisters = (c: GemmLike) => c.TM * c.TN + (c.TM + c.TN) * c.vec + 24 + (c.unroll ? c.BK : 0);

/**
 * A 2048³ SGEMM on a GPU of 132 multiprocessors, roughly: the thread tile
 * sets the arithmetic intensity (TM·TN over TM+TN) until registers spill;
 * threads per block want 128–256; the block tile's count wants whole waves
 * over the 132 SMs; BK trades pipelining for shared memory, the stages help
 * only while shared memory is left for a second block; vector loads help
 * only when TN is a multiple of them. The template's rules refuse blocks of
 * under 32 or over 1,024 threads (`valid`); a launch over 48 KiB of shared
 * memory fails, and so does a kernel over 255 registers: 23 % of the valid
 * configurations.
 */
export const GEMM_LIKE: Landscape<typeof GEMM_LIKE_SPACE> = {
  name: "gemm-like",
  space: GEMM_LIKE_SPACE,
  higherIsBetter: true,
  valid: (c) => gemmThreads(c) >= 32 && gemmThreads(c) <= 1024,
  features: (c) => ({ threads: gemmThreads(c), sharedBytes: gemmShared(c), registers: gemmRegisters(c), blocks: (2048 / c.BM) * (2048 / c.BN) }),
  score: (c) => {
    const threads = gemmThreads(c);
    const shared = gemmShared(c);
    const regs = gemmRegisters(c);
    if (threads > 1024 || threads < 32 || shared > 48 * 1024 || regs > 255) return NaN;
    const intensity = Math.min(1, (c.TM * c.TN) / (c.TM + c.TN) / 4);
    const spill = regs > 128 ? Math.exp(-(regs - 128) / 48) : 1;
    const occupancy = Math.exp(-((Math.log2(threads) - 7.5) ** 2) / 1.5);
    const blocksPerSm = Math.max(1, Math.min(Math.floor(2048 / threads), Math.floor((228 * 1024) / Math.max(shared, 1)), Math.floor(65536 / (regs * threads))));
    const blocks = (2048 / c.BM) * (2048 / c.BN);
    const slots = 132 * blocksPerSm;
    const waves = blocks / (Math.ceil(blocks / slots) * slots);
    const reuse = Math.min(1, (c.BM * c.BN) / (c.BM + c.BN) / 48);
    const bk = c.BK === 16 ? 1 : c.BK === 32 ? 0.9 : c.BK === 8 ? 0.8 : 0.55;
    const pipeline = c.stages === 1 ? 0.8 : shared * 2 <= 48 * 1024 ? (c.stages === 2 ? 1 : 1.05) : 0.9;
    const vector = c.vec === 1 ? 0.85 : c.TN % c.vec === 0 && c.TN >= 4 ? (c.vec === 4 ? 1.1 : 1) : 0.7;
    const unroll = c.unroll ? (c.BK >= 16 ? 1.1 : 0.95) : 1;
    const jitter = 1 + 0.04 * (hash01(keyOf(c)) - 0.5);
    return 20_000 * intensity * spill * occupancy * (0.4 + 0.6 * waves) * reuse * bk * pipeline * vector * unroll * jitter;
  },
};

export const CONV_LIKE_SPACE = {
  tile_f: [
    "1x1x8x8",
    "1x2x8x4",
    "2x1x8x4",
    "1x4x8x2",
    "2x2x4x4",
    "4x1x4x4",
    "1x1x16x4",
    "2x1x16x2",
    "1x2x16x2",
    "4x2x4x2",
    "1x8x4x2",
    "1x1x32x2",
    "2x4x8x1",
    "1x1x64x1",
    "8x1x8x1",
  ],
  tile_y: ["1x1x7x2", "1x2x7x1", "2x1x7x1", "1x1x14x1", "7x1x2x1", "7x2x1x1", "1x7x2x1", "14x1x1x1"],
  tile_x: ["1x1x7x2", "1x2x7x1", "2x1x7x1", "1x1x14x1", "7x1x2x1", "7x2x1x1", "1x7x2x1", "14x1x1x1"],
  tile_rc: ["1x64", "2x32", "4x16", "8x8", "16x4", "32x2", "64x1"],
  auto_unroll_max_step: [0, 512, 1500],
  unroll_explicit: [0, 1],
} as const;

type ConvLike = Config<typeof CONV_LIKE_SPACE>;
const factors = (s: string) => s.split("x").map(Number);
const convThreads = (c: ConvLike) => factors(c.tile_f)[2]! * factors(c.tile_y)[2]! * factors(c.tile_x)[2]!;
const convWork = (c: ConvLike) =>
  factors(c.tile_f)[3]! * factors(c.tile_y)[3]! * factors(c.tile_x)[3]! * factors(c.tile_f)[1]! * factors(c.tile_y)[1]! * factors(c.tile_x)[1]!;
const convShared = (c: ConvLike) => {
  const [, vf, tf, fi] = factors(c.tile_f);
  const [, vy, ty, yi] = factors(c.tile_y);
  const [, vx, tx, xi] = factors(c.tile_x);
  const rci = factors(c.tile_rc)[1]!;
  return 4 * rci * (vf! * tf! * fi! * 9 + (vy! * ty! * yi! + 2) * (vx! * tx! * xi! + 2));
};

/**
 * A 3×3 conv2d layer (64 filters, 14×14, 64 channels) in autotvm's direct
 * template: split knobs written "a×b×c×d", so the model must read the
 * factors out of strings. Threads (the third factors' product) want 64–256;
 * work per thread (the virtual-thread and inner factors) wants 4–16; the
 * reduction split trades shared memory against loop overhead; unrolling pays
 * only with enough work per thread. Fails: over 1,024 threads, over 48 KiB of
 * shared memory, more than 64 registers' worth of work per thread with full
 * unrolling.
 */
export const CONV_LIKE: Landscape<typeof CONV_LIKE_SPACE> = {
  name: "conv-like",
  space: CONV_LIKE_SPACE,
  higherIsBetter: false,
  valid: (c) => convThreads(c) <= 1024,
  features: (c) => ({ threads: convThreads(c), work: convWork(c), sharedBytes: convShared(c) }),
  score: (c) => {
    const threads = convThreads(c);
    const work = convWork(c);
    const shared = convShared(c);
    if (threads > 1024 || shared > 48 * 1024 || (work > 32 && c.auto_unroll_max_step === 1500 && c.unroll_explicit === 1)) return NaN;
    const occupancy = Math.exp(-((Math.log2(threads) - 7) ** 2) / 2);
    const perThread = Math.exp(-((Math.log2(work) - 3) ** 2) / 3);
    const rci = factors(c.tile_rc)[1]!;
    const reduction = rci >= 4 && rci <= 16 ? 1 : rci === 2 || rci === 32 ? 0.8 : 0.6;
    const unroll = c.auto_unroll_max_step === 0 ? 0.85 : work >= 4 ? (c.unroll_explicit ? 1.15 : 1.05) : 0.9;
    const blocks = factors(c.tile_f)[0]! * factors(c.tile_y)[0]! * factors(c.tile_x)[0]!;
    const fill = Math.min(1, blocks / 66);
    const jitter = 1 + 0.04 * (hash01(keyOf(c)) - 0.5);
    // Microseconds: lower is better.
    return 40 / (occupancy * perThread * reduction * unroll * (0.3 + 0.7 * fill) * jitter);
  },
};

/** One simulated tuning run: what it measured, in the order results arrived. */
export interface RunTrace {
  scores: number[];
  /** Proposals the searcher made (= scores.length unless it ran dry). */
  proposed: number;
}

/**
 * Drives `searcher` like a farm with `concurrency` boards: that many
 * proposals outstanding, results returned in a seeded random order (not the
 * order proposed), until `trials` results are in, the searcher runs dry, or
 * a result satisfies `until`.
 */
export function simulate<S extends KnobSpace>(
  searcher: { next(): { config: Config<S> } | undefined; tell(config: Config<S>, score: number): void },
  landscape: Landscape<S>,
  opts: { trials: number; concurrency: number; seed: number; until?: (score: number) => boolean },
): RunTrace {
  let a = opts.seed >>> 0;
  const random = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const out: Config<S>[] = [];
  const scores: number[] = [];
  let proposed = 0;
  let dry = false;
  while (scores.length < opts.trials) {
    while (!dry && out.length < opts.concurrency && proposed < opts.trials) {
      const p = searcher.next();
      if (!p) dry = true;
      else {
        out.push(p.config);
        proposed++;
      }
    }
    if (out.length === 0) break;
    const c = out.splice(Math.floor(random() * out.length), 1)[0]!;
    const s = landscape.score(c);
    scores.push(s);
    searcher.tell(c, s);
    if (opts.until?.(s)) break;
  }
  return { scores, proposed };
}

/** The best score of `scores` (NaN when none succeeded). */
export function bestOf(scores: readonly number[], higherIsBetter: boolean): number {
  let best = NaN;
  for (const s of scores) if (!Number.isNaN(s) && (Number.isNaN(best) || (higherIsBetter ? s > best : s < best))) best = s;
  return best;
}

/** Results until one within `tolerance` (0.02: 2 %) of `target`, or undefined when none is. */
export function trialsToReach(scores: readonly number[], target: number, higherIsBetter: boolean, tolerance: number): number | undefined {
  const i = scores.findIndex((s) => (higherIsBetter ? s >= target * (1 - tolerance) : s <= target * (1 + tolerance)));
  return i < 0 ? undefined : i + 1;
}
