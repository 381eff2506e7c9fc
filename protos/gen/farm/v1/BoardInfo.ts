// Original file: protos/farm/v1/common.proto

import type { HealthChange as _farm_v1_HealthChange, HealthChange__Output as _farm_v1_HealthChange__Output } from '../../farm/v1/HealthChange';
import type { CanaryTiming as _farm_v1_CanaryTiming, CanaryTiming__Output as _farm_v1_CanaryTiming__Output } from '../../farm/v1/CanaryTiming';
import type { CudaLaunchLimits as _farm_v1_CudaLaunchLimits, CudaLaunchLimits__Output as _farm_v1_CudaLaunchLimits__Output } from '../../farm/v1/CudaLaunchLimits';
import type { Lane as _farm_v1_Lane, Lane__Output as _farm_v1_Lane__Output } from '../../farm/v1/Lane';
import type { BoardState as _farm_v1_BoardState, BoardState__Output as _farm_v1_BoardState__Output } from '../../farm/v1/BoardState';
import type { BoardHealth as _farm_v1_BoardHealth, BoardHealth__Output as _farm_v1_BoardHealth__Output } from '../../farm/v1/BoardHealth';
import type { BoardKind as _farm_v1_BoardKind, BoardKind__Output as _farm_v1_BoardKind__Output } from '../../farm/v1/BoardKind';

/**
 * A board as the tracker knows it. `kind` names its backend (BoardKind);
 * `labels` are what hosts select on; `capabilities` are facts the agent reports
 * (memory, arch, ...), shown in the summary but never matched on.
 */
export interface BoardInfo {
  /**
   * "<agent name>/<board name>": the same across the agent's re-attaches and the tracker's restarts (what the tracker remembers of a board is kept under it)
   */
  'id'?: (string);
  'key'?: (string);
  'labels'?: ({[key: string]: string});
  'capabilities'?: ({[key: string]: string});
  'agent_id'?: (string);
  'agent_name'?: (string);
  /**
   * set while busy
   */
  'session_id'?: (string);
  /**
   * who holds the session
   */
  'client_id'?: (string);
  /**
   * why it is in that state
   */
  'health_reason'?: (string);
  /**
   * the last failure seen, kept after recovery
   */
  'last_error'?: (string);
  /**
   * an operator drained it: no new sessions until restored
   */
  'drained'?: (boolean);
  /**
   * "passed: <what it checked>" or "failed: <what came out wrong>"; empty before the first
   */
  'last_canary'?: (string);
  /**
   * when it ran (ms since the epoch)
   */
  'last_canary_at_ms'?: (number | string);
  /**
   * while drained: who drained it and why ("drained by alice: new fan"); empty otherwise
   */
  'drain_reason'?: (string);
  /**
   * its last health changes, oldest first (at most 50); only when SummaryRequest.health_history asks
   */
  'health_history'?: (_farm_v1_HealthChange)[];
  /**
   * Its canary's time (BoardHealthReport.kernel_ns) against its baseline
   * (tracker/canary-drift.ts): a board whose canary runs slower than it did
   * would bias every timing taken on it, so beyond the tracker's
   * --max-canary-drift it is suspect, with the figures in health_reason.
   */
  'canary_ns'?: (number | string);
  /**
   * the median of its first 5 timed passing canaries since it first attached or an operator restored it, ns; 0 while learning
   */
  'canary_baseline_ns'?: (number | string);
  /**
   * timed canaries the baseline has so far (5: learned)
   */
  'canary_baseline_runs'?: (number);
  /**
   * canary_ns / canary_baseline_ns (1.42: 42 % slower); 0 while the baseline is learned
   */
  'canary_drift'?: (number | string);
  /**
   * its last timed canaries, oldest first (at most 50); only when SummaryRequest.health_history asks
   */
  'canary_timings'?: (_farm_v1_CanaryTiming)[];
  /**
   * a CUDA board's: what one launch may ask of its GPU; absent on other kinds
   */
  'cuda_limits'?: (_farm_v1_CudaLaunchLimits | null);
  /**
   * while busy: how the session's frames travel; LANE_NONE until its lane opens
   */
  'session_lane'?: (_farm_v1_Lane);
  'state'?: (_farm_v1_BoardState);
  'health'?: (_farm_v1_BoardHealth);
  'kind'?: (_farm_v1_BoardKind);
}

/**
 * A board as the tracker knows it. `kind` names its backend (BoardKind);
 * `labels` are what hosts select on; `capabilities` are facts the agent reports
 * (memory, arch, ...), shown in the summary but never matched on.
 */
export interface BoardInfo__Output {
  /**
   * "<agent name>/<board name>": the same across the agent's re-attaches and the tracker's restarts (what the tracker remembers of a board is kept under it)
   */
  'id': (string);
  'key': (string);
  'labels': ({[key: string]: string});
  'capabilities': ({[key: string]: string});
  'agent_id': (string);
  'agent_name': (string);
  /**
   * set while busy
   */
  'session_id': (string);
  /**
   * who holds the session
   */
  'client_id': (string);
  /**
   * why it is in that state
   */
  'health_reason': (string);
  /**
   * the last failure seen, kept after recovery
   */
  'last_error': (string);
  /**
   * an operator drained it: no new sessions until restored
   */
  'drained': (boolean);
  /**
   * "passed: <what it checked>" or "failed: <what came out wrong>"; empty before the first
   */
  'last_canary': (string);
  /**
   * when it ran (ms since the epoch)
   */
  'last_canary_at_ms': (number);
  /**
   * while drained: who drained it and why ("drained by alice: new fan"); empty otherwise
   */
  'drain_reason': (string);
  /**
   * its last health changes, oldest first (at most 50); only when SummaryRequest.health_history asks
   */
  'health_history': (_farm_v1_HealthChange__Output)[];
  /**
   * Its canary's time (BoardHealthReport.kernel_ns) against its baseline
   * (tracker/canary-drift.ts): a board whose canary runs slower than it did
   * would bias every timing taken on it, so beyond the tracker's
   * --max-canary-drift it is suspect, with the figures in health_reason.
   */
  'canary_ns': (number);
  /**
   * the median of its first 5 timed passing canaries since it first attached or an operator restored it, ns; 0 while learning
   */
  'canary_baseline_ns': (number);
  /**
   * timed canaries the baseline has so far (5: learned)
   */
  'canary_baseline_runs': (number);
  /**
   * canary_ns / canary_baseline_ns (1.42: 42 % slower); 0 while the baseline is learned
   */
  'canary_drift': (number);
  /**
   * its last timed canaries, oldest first (at most 50); only when SummaryRequest.health_history asks
   */
  'canary_timings': (_farm_v1_CanaryTiming__Output)[];
  /**
   * a CUDA board's: what one launch may ask of its GPU; absent on other kinds
   */
  'cuda_limits': (_farm_v1_CudaLaunchLimits__Output | null);
  /**
   * while busy: how the session's frames travel; LANE_NONE until its lane opens
   */
  'session_lane': (_farm_v1_Lane__Output);
  'state': (_farm_v1_BoardState__Output);
  'health': (_farm_v1_BoardHealth__Output);
  'kind': (_farm_v1_BoardKind__Output);
}
