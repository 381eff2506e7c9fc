// Original file: protos/farm/v1/common.proto

import type { HealthChange as _farm_v1_HealthChange, HealthChange__Output as _farm_v1_HealthChange__Output } from '../../farm/v1/HealthChange';

/**
 * A board as the tracker knows it. `kind` names the backend (cpu, cuda, vta-sim);
 * `labels` are what hosts select on; `capabilities` are facts the agent reports
 * (memory, arch, ...), shown in the summary but never matched on.
 */
export interface BoardInfo {
  /**
   * "<agent name>/<board name>": the same across the agent's re-attaches and the tracker's restarts (what the tracker remembers of a board is kept under it)
   */
  'id'?: (string);
  'key'?: (string);
  'kind'?: (string);
  'labels'?: ({[key: string]: string});
  'capabilities'?: ({[key: string]: string});
  'agent_id'?: (string);
  'agent_name'?: (string);
  /**
   * starting | free | busy | draining | quarantined; absent (BoardCommand replies only): not attached, a board the tracker remembers
   */
  'state'?: (string);
  /**
   * set while busy
   */
  'session_id'?: (string);
  /**
   * who holds the session
   */
  'client_id'?: (string);
  /**
   * healthy | suspect | quarantined (tracker/health.ts)
   */
  'health'?: (string);
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
   * while busy: how the session's frames travel (direct | relay | grpc; empty until its lane opens)
   */
  'session_lane'?: (string);
  /**
   * while drained: who drained it and why ("drained by alice: new fan"); empty otherwise
   */
  'drain_reason'?: (string);
  /**
   * its last health changes, oldest first (at most 50); only when SummaryRequest.health_history asks
   */
  'health_history'?: (_farm_v1_HealthChange)[];
}

/**
 * A board as the tracker knows it. `kind` names the backend (cpu, cuda, vta-sim);
 * `labels` are what hosts select on; `capabilities` are facts the agent reports
 * (memory, arch, ...), shown in the summary but never matched on.
 */
export interface BoardInfo__Output {
  /**
   * "<agent name>/<board name>": the same across the agent's re-attaches and the tracker's restarts (what the tracker remembers of a board is kept under it)
   */
  'id': (string);
  'key': (string);
  'kind': (string);
  'labels': ({[key: string]: string});
  'capabilities': ({[key: string]: string});
  'agent_id': (string);
  'agent_name': (string);
  /**
   * starting | free | busy | draining | quarantined; absent (BoardCommand replies only): not attached, a board the tracker remembers
   */
  'state': (string);
  /**
   * set while busy
   */
  'session_id': (string);
  /**
   * who holds the session
   */
  'client_id': (string);
  /**
   * healthy | suspect | quarantined (tracker/health.ts)
   */
  'health': (string);
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
   * while busy: how the session's frames travel (direct | relay | grpc; empty until its lane opens)
   */
  'session_lane': (string);
  /**
   * while drained: who drained it and why ("drained by alice: new fan"); empty otherwise
   */
  'drain_reason': (string);
  /**
   * its last health changes, oldest first (at most 50); only when SummaryRequest.health_history asks
   */
  'health_history': (_farm_v1_HealthChange__Output)[];
}
