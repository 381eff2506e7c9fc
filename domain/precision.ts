/**
 * A precision target for time evaluations: repeat until the median's
 * relative standard error is at most a bound, or a time budget ends. The
 * board decides when to stop with it; the host reports it for the results
 * it got (BenchmarkResult.rse), so both use this one formula.
 *
 * The standard error of a sample median is √(π/2) · σ / √n for normally
 * distributed samples, 1.25× the mean's; σ is estimated robustly, as
 * 1.4826 × the median absolute deviation, so that a repeat disturbed by the
 * machine (an outlier, common in timings) does not hold the target out of
 * reach the way the sample standard deviation would. Relative to the median
 * itself. Timings are not normal, but a tuner needs a comparable, cheap
 * bound more than an exact one.
 */

/** With a target and no budget: at most this long adding repeats. */
export const DEFAULT_PRECISION_BUDGET_MS = 5000;
/** With a target: at least this many repeats before the estimate is trusted (a MAD of fewer samples is a matter of luck). */
export const MIN_PRECISION_REPEATS = 10;
/** With a target: at most this many repeats in all, whatever the budget. */
export const MAX_PRECISION_REPEATS = 10_000;

/** 1.4826 × MAD estimates σ for normal samples. */
const MAD_TO_SIGMA = 1.4826;

/** The median of `values` (NaN when empty): the agent's canary timing and the tracker's canary drift use it too. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const n = sorted.length;
  return n % 2 ? sorted[(n - 1) / 2]! : (sorted[n / 2 - 1]! + sorted[n / 2]!) / 2;
}

/** The median's relative standard error of `samples`; Infinity with fewer than two or a zero median. */
export function medianRse(samples: readonly number[]): number {
  const n = samples.length;
  if (n < 2) return Infinity;
  const mid = median(samples);
  const mad = median(samples.map((x) => Math.abs(x - mid)));
  if (mad === 0) return 0;
  return mid > 0 ? (Math.sqrt(Math.PI / 2) * MAD_TO_SIGMA * mad) / Math.sqrt(n) / mid : Infinity;
}
