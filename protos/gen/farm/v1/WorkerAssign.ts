// Original file: protos/farm/v1/worker.proto


/**
 * Serve this session. `dir`: its folder, made by the agent (owned by the
 * worker's uid, 0700). `route` grpc: the worker opens ServeSession with the
 * ticket (`token`); any other: its lane comes as WorkerLane.
 */
export interface WorkerAssign {
  'session_id'?: (string);
  'token'?: (string);
  'dir'?: (string);
  'route'?: (string);
}

/**
 * Serve this session. `dir`: its folder, made by the agent (owned by the
 * worker's uid, 0700). `route` grpc: the worker opens ServeSession with the
 * ticket (`token`); any other: its lane comes as WorkerLane.
 */
export interface WorkerAssign__Output {
  'session_id': (string);
  'token': (string);
  'dir': (string);
  'route': (string);
}
