// Original file: protos/farm/v1/agent.proto


/**
 * A host reached the session's worker on the direct lane (the tracker sees the other lanes itself).
 */
export interface LaneOpened {
  'session_id'?: (string);
}

/**
 * A host reached the session's worker on the direct lane (the tracker sees the other lanes itself).
 */
export interface LaneOpened__Output {
  'session_id': (string);
}
