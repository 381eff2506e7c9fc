// Original file: protos/farm/v1/common.proto


/**
 * A board as the tracker knows it. `kind` names the backend (cpu, cuda, vta-sim);
 * `labels` are what hosts select on; `capabilities` are facts the agent reports
 * (memory, arch, ...), shown in the summary but never matched on.
 */
export interface BoardInfo {
  /**
   * stable within the tracker: "<agent_id>/<local name>"
   */
  'id'?: (string);
  'key'?: (string);
  'kind'?: (string);
  'labels'?: ({[key: string]: string});
  'capabilities'?: ({[key: string]: string});
  'agent_id'?: (string);
  'agent_name'?: (string);
  /**
   * starting | free | busy | draining | quarantined
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
}

/**
 * A board as the tracker knows it. `kind` names the backend (cpu, cuda, vta-sim);
 * `labels` are what hosts select on; `capabilities` are facts the agent reports
 * (memory, arch, ...), shown in the summary but never matched on.
 */
export interface BoardInfo__Output {
  /**
   * stable within the tracker: "<agent_id>/<local name>"
   */
  'id': (string);
  'key': (string);
  'kind': (string);
  'labels': ({[key: string]: string});
  'capabilities': ({[key: string]: string});
  'agent_id': (string);
  'agent_name': (string);
  /**
   * starting | free | busy | draining | quarantined
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
}
