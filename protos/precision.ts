/**
 * A precision target for time evaluations: repeat until the median's
 * relative standard error is at most a bound, or a time budget ends. The
 * board decides when to stop with it; the host reports it for the results
 * it got (BenchmarkResult.rse), so both use this one formula.
 *
 * The standard error of a sample median is √(π/2) · s / √n for normally
 * distributed samples (s: the sample standard deviation), 1.25× the mean's;
 * relative to the median itself. Timings are not normal, but a tuner needs a
 * comparable, cheap bound more than an exact one.
 */

/** With a target and no budget: at most this long adding repeats. */
export const DEFAULT_PRECISION_BUDGET_MS = 5000;
/** With a target: at most this many repeats in all, whatever the budget. */
export const MAX_PRECISION_REPEATS = 10_000;

/** The median's relative standard error of `samples`; Infinity with fewer than two or a zero median. */
export function medianRse(samples: readonly number[]): number {
  const n = samples.length;
  if (n < 2) return Infinity;
  const sorted = [...samples].sort((a, b) => a - b);
  const median = n % 2 ? sorted[(n - 1) / 2]! : (sorted[n / 2 - 1]! + sorted[n / 2]!) / 2;
  const mean = samples.reduce((a, b) => a + b, 0) / n;
  const sd = Math.sqrt(samples.reduce((a, x) => a + (x - mean) ** 2, 0) / (n - 1));
  if (sd === 0) return 0;
  return median > 0 ? (Math.sqrt(Math.PI / 2) * sd) / Math.sqrt(n) / median : Infinity;
}
