// Original file: protos/farm/v1/agent.proto

import type { HealthReportKind as _farm_v1_HealthReportKind, HealthReportKind__Output as _farm_v1_HealthReportKind__Output } from '../../farm/v1/HealthReportKind';

/**
 * A canary run or an infrastructure error on one board (tracker/health.ts).
 */
export interface BoardHealthReport {
  'board_name'?: (string);
  /**
   * canary: passed
   */
  'ok'?: (boolean);
  /**
   * what failed, or what the canary checked
   */
  'reason'?: (string);
  'duration_ms'?: (number | string);
  /**
   * When the agent saw the result (its own clock, ms since the epoch; 0: an
   * older agent). The agent repeats each board's last canary at every attach;
   * a tracker that remembers the board applied it already, and knows it by
   * this time (tracker/health.ts).
   */
  'at_ms'?: (number | string);
  /**
   * A passing canary: the time of its kernel proper, per run, in ns — the
   * median of timed repeats inside the worker, next to the device (events on
   * CUDA), without the worker's start, the module load or the check. The
   * tracker keeps each board's history of it and marks a board whose canary
   * drifts slower than its baseline suspect (tracker/canary-drift.ts).
   * 0: not timed (a failed canary, an infrastructure error, an older agent).
   */
  'kernel_ns'?: (number | string);
  'kind'?: (_farm_v1_HealthReportKind);
}

/**
 * A canary run or an infrastructure error on one board (tracker/health.ts).
 */
export interface BoardHealthReport__Output {
  'board_name': (string);
  /**
   * canary: passed
   */
  'ok': (boolean);
  /**
   * what failed, or what the canary checked
   */
  'reason': (string);
  'duration_ms': (number);
  /**
   * When the agent saw the result (its own clock, ms since the epoch; 0: an
   * older agent). The agent repeats each board's last canary at every attach;
   * a tracker that remembers the board applied it already, and knows it by
   * this time (tracker/health.ts).
   */
  'at_ms': (number);
  /**
   * A passing canary: the time of its kernel proper, per run, in ns — the
   * median of timed repeats inside the worker, next to the device (events on
   * CUDA), without the worker's start, the module load or the check. The
   * tracker keeps each board's history of it and marks a board whose canary
   * drifts slower than its baseline suspect (tracker/canary-drift.ts).
   * 0: not timed (a failed canary, an infrastructure error, an older agent).
   */
  'kernel_ns': (number);
  'kind': (_farm_v1_HealthReportKind__Output);
}
