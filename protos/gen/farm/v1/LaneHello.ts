// Original file: protos/farm/v1/session.proto

import type { LaneRole as _farm_v1_LaneRole, LaneRole__Output as _farm_v1_LaneRole__Output } from '../../farm/v1/LaneRole';

/**
 * The first frame on a lane, from the side that connects.
 */
export interface LaneHello {
  'session_id'?: (string);
  /**
   * Grant.ticket
   */
  'ticket'?: (string);
  /**
   * host, relay lane on a farm with tokens: its client token
   */
  'token'?: (string);
  'role'?: (_farm_v1_LaneRole);
}

/**
 * The first frame on a lane, from the side that connects.
 */
export interface LaneHello__Output {
  'session_id': (string);
  /**
   * Grant.ticket
   */
  'ticket': (string);
  /**
   * host, relay lane on a farm with tokens: its client token
   */
  'token': (string);
  'role': (_farm_v1_LaneRole__Output);
}
