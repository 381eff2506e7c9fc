/**
 * How a canary's kernel is timed (CanaryResult.kernelNs). The tracker keeps
 * each board's history of it and compares the recent time with the board's
 * baseline (tracker/canary-drift.ts): a board that runs slower than it did
 * would bias every timing a tuner takes on it. So the figure must be the
 * board's, not the worker's: the kernel proper — no worker start, no module
 * load, no answer check — `number` runs back to back per repeat (a run of a
 * tiny kernel is below the clock's grain and the call's own cost), the median
 * per run over CANARY_REPEATS repeats, so that one repeat the host disturbed
 * (a preemption, an interrupt) moves nothing.
 */
import { median } from "../../domain/index.ts";

/** Timed repeats per canary. */
export const CANARY_REPEATS = 9;

/** Nanoseconds per run of the canary's kernel; `repeat(number)` runs it `number` times and returns the elapsed nanoseconds. */
export function timeCanary(repeat: (number: number) => number, number: number): number {
  const perRun: number[] = [];
  for (let i = 0; i < CANARY_REPEATS; i++) perRun.push(repeat(number) / number);
  return median(perRun);
}
