// Original file: protos/farm/v1/worker.proto


/**
 * The session's lane: a socket on fd 5. `kind` "direct": the host's hello was
 * checked, the worker welcomes it; "relay": the tracker's welcome is the first
 * frame. `rest`: bytes already read from the socket.
 */
export interface WorkerLane {
  'session_id'?: (string);
  'kind'?: (string);
  'rest'?: (Buffer | Uint8Array | string);
}

/**
 * The session's lane: a socket on fd 5. `kind` "direct": the host's hello was
 * checked, the worker welcomes it; "relay": the tracker's welcome is the first
 * frame. `rest`: bytes already read from the socket.
 */
export interface WorkerLane__Output {
  'session_id': (string);
  'kind': (string);
  'rest': (Buffer);
}
