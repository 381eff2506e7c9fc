// Original file: protos/farm/v1/worker.proto


/**
 * A host reached this worker at its standby lane.
 */
export interface WorkerLaneOpened {
  'session_id'?: (string);
}

/**
 * A host reached this worker at its standby lane.
 */
export interface WorkerLaneOpened__Output {
  'session_id': (string);
}
