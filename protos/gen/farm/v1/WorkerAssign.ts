// Original file: protos/farm/v1/worker.proto

import type { Route as _farm_v1_Route, Route__Output as _farm_v1_Route__Output } from '../../farm/v1/Route';

/**
 * Serve this session. `dir`: its folder, made by the agent (owned by the
 * worker's uid, 0700). its lane comes as WorkerLane, on every route (grpc: one end of a
 * socket pair whose other end the agent joins to the session's ServeSession
 * stream).
 */
export interface WorkerAssign {
  'session_id'?: (string);
  'token'?: (string);
  'dir'?: (string);
  'route'?: (_farm_v1_Route);
  /**
   * the lease's session timeout (0: none), for the words of a call's TIMEOUT
   */
  'session_timeout_ms'?: (number);
  /**
   * the session's calls end (TIMEOUT) this long from now: the worker's report then reaches the tracker before the lease's own end; 0: no bound
   */
  'calls_end_in_ms'?: (number);
}

/**
 * Serve this session. `dir`: its folder, made by the agent (owned by the
 * worker's uid, 0700). its lane comes as WorkerLane, on every route (grpc: one end of a
 * socket pair whose other end the agent joins to the session's ServeSession
 * stream).
 */
export interface WorkerAssign__Output {
  'session_id': (string);
  'token': (string);
  'dir': (string);
  'route': (_farm_v1_Route__Output);
  /**
   * the lease's session timeout (0: none), for the words of a call's TIMEOUT
   */
  'session_timeout_ms': (number);
  /**
   * the session's calls end (TIMEOUT) this long from now: the worker's report then reaches the tracker before the lease's own end; 0: no bound
   */
  'calls_end_in_ms': (number);
}
