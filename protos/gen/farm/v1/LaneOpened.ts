// Original file: protos/farm/v1/agent.proto

import type { Lane as _farm_v1_Lane, Lane__Output as _farm_v1_Lane__Output } from '../../farm/v1/Lane';

/**
 * A host reached the session's worker on the direct lane (the tracker sees the other lanes itself).
 */
export interface LaneOpened {
  'session_id'?: (string);
  /**
   * the lane that opened (LANE_DIRECT)
   */
  'lane'?: (_farm_v1_Lane);
}

/**
 * A host reached the session's worker on the direct lane (the tracker sees the other lanes itself).
 */
export interface LaneOpened__Output {
  'session_id': (string);
  /**
   * the lane that opened (LANE_DIRECT)
   */
  'lane': (_farm_v1_Lane__Output);
}
