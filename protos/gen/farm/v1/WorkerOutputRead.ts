// Original file: protos/farm/v1/worker.proto


/**
 * The session's host asks what this worker printed (session.proto Output):
 * the agent answers with what it read from the worker's stdout and stderr
 * since the session began, from byte `from` on, one bounded piece.
 */
export interface WorkerOutputRead {
  'id'?: (number);
  'from'?: (number | string);
}

/**
 * The session's host asks what this worker printed (session.proto Output):
 * the agent answers with what it read from the worker's stdout and stderr
 * since the session began, from byte `from` on, one bounded piece.
 */
export interface WorkerOutputRead__Output {
  'id': (number);
  'from': (number);
}
