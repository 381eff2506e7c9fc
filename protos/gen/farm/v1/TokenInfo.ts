// Original file: protos/farm/v1/host.proto

import type { TokenKind as _farm_v1_TokenKind, TokenKind__Output as _farm_v1_TokenKind__Output } from '../../farm/v1/TokenKind';

export interface TokenInfo {
  'id'?: (string);
  'name'?: (string);
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
  'kind'?: (_farm_v1_TokenKind);
}

export interface TokenInfo__Output {
  'id': (string);
  'name': (string);
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
  'kind': (_farm_v1_TokenKind__Output);
}
