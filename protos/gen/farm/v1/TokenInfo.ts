// Original file: protos/farm/v1/host.proto


export interface TokenInfo {
  'id'?: (string);
  'name'?: (string);
  'kind'?: (string);
  'keys'?: (string)[];
  'has_max_priority'?: (boolean);
  'max_priority'?: (number);
  'max_session_timeout_ms'?: (number);
  'created_at_ms'?: (number | string);
  /**
   * 0: never
   */
  'expires_at_ms'?: (number | string);
  /**
   * 0: live
   */
  'revoked_at_ms'?: (number | string);
}

export interface TokenInfo__Output {
  'id': (string);
  'name': (string);
  'kind': (string);
  'keys': (string)[];
  'has_max_priority': (boolean);
  'max_priority': (number);
  'max_session_timeout_ms': (number);
  'created_at_ms': (number);
  /**
   * 0: never
   */
  'expires_at_ms': (number);
  /**
   * 0: live
   */
  'revoked_at_ms': (number);
}
