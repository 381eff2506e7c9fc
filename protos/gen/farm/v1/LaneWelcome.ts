// Original file: protos/farm/v1/session.proto

import type { Error as _farm_v1_Error, Error__Output as _farm_v1_Error__Output } from '../../farm/v1/Error';

/**
 * The answer to a LaneHello: the lane is open (no error), or why not; then the lane closes.
 */
export interface LaneWelcome {
  'error'?: (_farm_v1_Error | null);
}

/**
 * The answer to a LaneHello: the lane is open (no error), or why not; then the lane closes.
 */
export interface LaneWelcome__Output {
  'error': (_farm_v1_Error__Output | null);
}
