// Original file: protos/farm/v1/session.proto


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
   * host | worker
   */
  'role'?: (string);
  /**
   * host, relay lane on a farm with tokens: its client token
   */
  'token'?: (string);
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
   * host | worker
   */
  'role': (string);
  /**
   * host, relay lane on a farm with tokens: its client token
   */
  'token': (string);
}
