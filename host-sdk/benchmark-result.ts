import { medianRse, throttledOf } from "../domain/index.ts";

/** Why a time evaluation stopped: its `repeat` repeats, or, with a precision target, which bound ended it. */
export type StoppedBy = "repeat" | "precision" | "budget" | "max_repeats";

/** The result of a time evaluation: every repeat plus its summary, in seconds (TVM's BenchmarkResult). */
export class BenchmarkResult {
  readonly mean: number;
  readonly median: number;
  readonly min: number;
  readonly max: number;
  /** Population standard deviation (numpy's np.std, as TVM). */
  readonly std: number;
  /** The median's relative standard error (domain/precision.ts): the precision achieved. */
  readonly rse: number;
  /**
   * Whether the board says the GPU was throttled (power, heat, a hardware
   * slowdown) while it timed: from `conditions.throttled`, which names the
   * reasons (domain/throttle.ts). Undefined where the board cannot tell or
   * does not say: CPU and VTA boards, a GPU without NVML.
   */
  readonly throttled: boolean | undefined;

  constructor(
    /** Seconds per call, one entry per repeat. */
    readonly results: readonly number[],
    /** Calls per repeat after min_repeat_ms growth. */
    readonly number: number,
    /** What the board reported about itself at the time (clocks, model, ...). */
    readonly conditions: Readonly<Record<string, string>> = {},
    /** With a precision target: "precision" (reached), "budget" or "max_repeats" (not reached); else "repeat". */
    readonly stoppedBy: StoppedBy = "repeat",
  ) {
    const n = results.length;
    const sorted = [...results].sort((a, b) => a - b);
    this.mean = n ? results.reduce((a, b) => a + b, 0) / n : NaN;
    this.median = n ? (n % 2 ? sorted[(n - 1) / 2]! : (sorted[n / 2 - 1]! + sorted[n / 2]!) / 2) : NaN;
    this.min = n ? sorted[0]! : NaN;
    this.max = n ? sorted[n - 1]! : NaN;
    this.std = n ? Math.sqrt(results.reduce((a, r) => a + (r - this.mean) ** 2, 0) / n) : NaN;
    this.rse = medianRse(results);
    this.throttled = throttledOf(conditions);
  }

  /** TVM's layout: "Execution time summary:" then mean / median / max / min / std in ms. */
  toString(): string {
    const ms = (s: number) => (s * 1e3).toFixed(4).padStart(12);
    return [
      "Execution time summary:",
      " mean (ms)   median (ms)    max (ms)     min (ms)     std (ms)  ",
      `${ms(this.mean)} ${ms(this.median)} ${ms(this.max)} ${ms(this.min)} ${ms(this.std)}`,
    ].join("\n");
  }
}
