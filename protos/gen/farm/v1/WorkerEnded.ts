// Original file: protos/farm/v1/worker.proto

import type { Error as _farm_v1_Error, Error__Output as _farm_v1_Error__Output } from '../../farm/v1/Error';

/**
 * The session ended on the worker's side. `error`: why, when not cleanly.
 * `reusable`: the worker offers to serve again (the agent decides).
 */
export interface WorkerEnded {
  'session_id'?: (string);
  'reusable'?: (boolean);
  'error'?: (_farm_v1_Error | null);
}

/**
 * The session ended on the worker's side. `error`: why, when not cleanly.
 * `reusable`: the worker offers to serve again (the agent decides).
 */
export interface WorkerEnded__Output {
  'session_id': (string);
  'reusable': (boolean);
  'error': (_farm_v1_Error__Output | null);
}
