// Original file: protos/farm/v1/worker.proto


/**
 * A host reached this worker at its standby lane.
 */
export interface WorkerLaneOpened {
  'session_id'?: (string);
  /**
   * the host's ticket when the worker took the session by it, before its assignment (the agent checks it too)
   */
  'ticket'?: (string);
}

/**
 * A host reached this worker at its standby lane.
 */
export interface WorkerLaneOpened__Output {
  'session_id': (string);
  /**
   * the host's ticket when the worker took the session by it, before its assignment (the agent checks it too)
   */
  'ticket': (string);
}
