/**
 * How many candidates the pipeline keeps pulled and building ahead of the
 * boards. Too few and a board waits for the compiler; too many and a search
 * that proposes from the latest results proposes blind, since everything in
 * the queue was chosen without the results still to come.
 */

/** Before anything is measured: every compile slot busy, and a candidate ready for every board slot. */
export function initialQueueDepth(compileParallelism: number, slots: number, inFlight: number): number {
  return compileParallelism + slots * inFlight;
}

/** What the batch has seen so far. */
export interface DepthSamples {
  /** Boards (board loops) in the batch. */
  slots: number;
  inFlight: number;
  compileParallelism: number;
  /** The boards' own seconds per candidate (measure_wall_ns). */
  boardSeconds: readonly number[];
  /** Seconds per host compile. */
  compileSeconds: readonly number[];
}

/**
 * The queue depth that covers a slow compile (the 90th percentile seen)
 * at the boards' capacity — their count over the median of their own time
 * per candidate — with half again for luck: by Little's law, that many
 * candidates must be building for the boards never to wait for the
 * compiler. No deeper than every compile slot plus two per board slot, since
 * a search proposes everything in the queue without the results still to
 * come; and never from the achieved rate, which a compiler that falls behind
 * would drag down with it. Undefined until every board has measured once
 * and four compiles have finished: too little to go on.
 */
export function adaptedQueueDepth(s: DepthSamples): number | undefined {
  if (s.boardSeconds.length < s.slots || s.compileSeconds.length < 4) return undefined;
  const capacity = s.slots / Math.max(percentile(s.boardSeconds, 0.5), 1e-3);
  const slow = percentile(s.compileSeconds, 0.9);
  const base = s.slots * s.inFlight;
  return Math.min(s.compileParallelism + 2 * base, base + Math.ceil(1.5 * capacity * slow));
}

/** The `q` quantile of `xs` (non-empty), as the sample at or below it: no interpolation. */
export function percentile(xs: readonly number[], q: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}
