// Original file: protos/farm/v1/worker.proto


/**
 * The tracker ended the session cleanly: close the lane with the end frame and report WorkerEnded.
 */
export interface WorkerEnd {
  'session_id'?: (string);
}

/**
 * The tracker ended the session cleanly: close the lane with the end frame and report WorkerEnded.
 */
export interface WorkerEnd__Output {
  'session_id': (string);
}
