// Original file: protos/farm/v1/agent.proto

import type { Error as _farm_v1_Error, Error__Output as _farm_v1_Error__Output } from '../../farm/v1/Error';

/**
 * The agent saw a session end on its side (worker exit, crash, call timeout).
 */
export interface SessionEnded {
  'session_id'?: (string);
  'reason'?: (_farm_v1_Error | null);
}

/**
 * The agent saw a session end on its side (worker exit, crash, call timeout).
 */
export interface SessionEnded__Output {
  'session_id': (string);
  'reason': (_farm_v1_Error__Output | null);
}
