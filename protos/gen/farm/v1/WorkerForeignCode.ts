// Original file: protos/farm/v1/worker.proto


/**
 * Sent, and written to the channel, before the session's first foreign code
 * (a shared object, a cubin) is loaded: from then on nothing this worker says
 * is believed beyond its own session, and it never serves another.
 */
export interface WorkerForeignCode {
  'session_id'?: (string);
}

/**
 * Sent, and written to the channel, before the session's first foreign code
 * (a shared object, a cubin) is loaded: from then on nothing this worker says
 * is believed beyond its own session, and it never serves another.
 */
export interface WorkerForeignCode__Output {
  'session_id': (string);
}
