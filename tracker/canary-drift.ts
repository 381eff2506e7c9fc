/**
 * Canary drift: each board's history of its canary's kernel time
 * (BoardHealthReport.kernel_ns, device-agent/backends/canary-timing.ts) and
 * the baseline it is held to. A board whose canary runs slower than it did —
 * a GPU stuck at a low clock, a CPU throttled or shared with a noisy
 * neighbour — still computes right answers, so its canaries pass; but every
 * time measured on it is too long, and a tuner spreading candidates over the
 * farm would rank them by board as much as by kernel. The health machine
 * (tracker/health.ts) makes such a board suspect, with the figures as reason.
 *
 * The baseline is the median of the board's first CANARY_BASELINE_RUNS timed
 * passing canaries after it first attached, or after an operator restored it
 * (`kfarm board restore`: the way to accept a board's new speed). The recent
 * time is the median of the last CANARY_RECENT_RUNS, so one run the host
 * disturbed moves nothing; the drift is recent / baseline.
 *
 * Faster than the baseline is never suspect, and never moves the baseline:
 * a board cannot bias a search by being well, and "faster" most often means
 * the baseline was learned on a bad day (the board attached while its host
 * was busy) — which the ratio below 1 shows, and a restore relearns. A
 * baseline that followed quick runs down by itself would let a lucky stretch
 * (an idle host, a turbo burst) set a bar the board cannot hold, and mark it
 * suspect in ordinary conditions.
 */
import { median } from "../domain/index.ts";

/** Timed canaries kept per board, newest last. */
export const CANARY_TIMINGS_MAX = 50;
/** Timed passing canaries whose median is the baseline. */
export const CANARY_BASELINE_RUNS = 5;
/** The recent time is the median of this many last timed canaries (at most CANARY_BASELINE_RUNS: after a reset, the recent runs are all new ones by the time there is a baseline). */
export const CANARY_RECENT_RUNS = 5;
/** A recent canary time beyond this many times the baseline makes a board suspect (TrackerOptions.maxCanaryDrift). */
export const DEFAULT_MAX_CANARY_DRIFT = 1.25;

/** One timed canary: when the tracker received it (its clock, ms) and its kernel's time per run (ns). */
export interface CanaryTiming {
  at: number;
  ns: number;
}

/** The drift's state as plain data (part of the health record the tracker's state file keeps). */
export interface CanaryRecord {
  /** The last timed canaries, oldest first (at most CANARY_TIMINGS_MAX). */
  timings: CanaryTiming[];
  /** 0 while learning. */
  baselineNs: number;
  /** Timed canaries counted toward the baseline since it was last reset (CANARY_BASELINE_RUNS: learned). */
  baselineRuns: number;
  /** The last verdict was beyond the bound (the board is suspect for its speed). */
  slow: boolean;
}

/** What the last timed canary says, against a bound. */
export type DriftVerdict = { kind: "learning" } | { kind: "within" | "slower"; ratio: number; recentNs: number; baselineNs: number };

export class CanaryDrift {
  private readonly kept: CanaryTiming[] = [];
  private baseline = 0;
  private runs = 0;
  private wasSlow = false;

  static restore(r: CanaryRecord): CanaryDrift {
    const d = new CanaryDrift();
    d.kept.push(...r.timings.slice(-CANARY_TIMINGS_MAX));
    d.baseline = r.baselineNs;
    d.runs = r.baselineRuns;
    d.wasSlow = r.slow;
    return d;
  }

  snapshot(): CanaryRecord {
    return { timings: [...this.kept], baselineNs: this.baseline, baselineRuns: this.runs, slow: this.wasSlow };
  }

  get timings(): readonly CanaryTiming[] {
    return this.kept;
  }

  get baselineNs(): number {
    return this.baseline;
  }

  get baselineRuns(): number {
    return this.runs;
  }

  /** The median of the last CANARY_RECENT_RUNS timed canaries; 0 before the first. */
  get recentNs(): number {
    return this.kept.length ? median(this.kept.slice(-CANARY_RECENT_RUNS).map((t) => t.ns)) : 0;
  }

  /** recent / baseline; 0 while learning. */
  get ratio(): number {
    return this.baseline > 0 ? this.recentNs / this.baseline : 0;
  }

  /** The last verdict was beyond the bound. */
  get slow(): boolean {
    return this.wasSlow;
  }

  /**
   * A passing canary's time: kept, counted toward the baseline while it is
   * learned, and judged against `maxDrift` (0: never slow).
   */
  record(ns: number, maxDrift: number, at = Date.now()): DriftVerdict {
    this.kept.push({ at, ns });
    if (this.kept.length > CANARY_TIMINGS_MAX) this.kept.splice(0, this.kept.length - CANARY_TIMINGS_MAX);
    if (this.runs < CANARY_BASELINE_RUNS) {
      this.runs++;
      if (this.runs === CANARY_BASELINE_RUNS) this.baseline = median(this.kept.slice(-CANARY_BASELINE_RUNS).map((t) => t.ns));
    }
    if (this.baseline <= 0) return { kind: "learning" };
    const recentNs = this.recentNs;
    const ratio = recentNs / this.baseline;
    this.wasSlow = maxDrift > 0 && ratio > maxDrift;
    return { kind: this.wasSlow ? "slower" : "within", ratio, recentNs, baselineNs: this.baseline };
  }

  /** Learn the baseline again from the next timed canaries (an operator restored the board); the history stays. */
  reset(): void {
    this.baseline = 0;
    this.runs = 0;
    this.wasSlow = false;
  }
}

/** "canary 1.42× slower than its baseline: 18.1 µs against 12.7 µs" */
export function slowerReason(v: Extract<DriftVerdict, { ratio: number }>): string {
  return `canary ${v.ratio.toFixed(2)}× slower than its baseline: ${formatNs(v.recentNs)} against ${formatNs(v.baselineNs)}`;
}

/** "canary back within 1.25× of its baseline: 13.0 µs against 12.7 µs" */
export function withinReason(v: Extract<DriftVerdict, { ratio: number }>, maxDrift: number): string {
  return `canary back within ${maxDrift}× of its baseline: ${formatNs(v.recentNs)} against ${formatNs(v.baselineNs)}`;
}

/** Nanoseconds for people, three significant digits: "812 ns", "18.1 µs", "1.23 ms", "2.50 s". */
export function formatNs(ns: number): string {
  // The largest unit the value rounds to at least 1 of: 999.6 ns is "1.00 µs", not "1.00e+3 ns".
  for (const [scale, unit] of [
    [1e9, "s"],
    [1e6, "ms"],
    [1e3, "µs"],
  ] as const) {
    const v = ns / scale;
    if (Number(v.toPrecision(3)) >= 1) return `${v >= 1000 ? v.toFixed(0) : v.toPrecision(3)} ${unit}`;
  }
  return `${ns.toPrecision(3)} ns`;
}
