// Original file: protos/farm/v1/host.proto

import type { TokenAction as _farm_v1_TokenAction, TokenAction__Output as _farm_v1_TokenAction__Output } from '../../farm/v1/TokenAction';
import type { TokenKind as _farm_v1_TokenKind, TokenKind__Output as _farm_v1_TokenKind__Output } from '../../farm/v1/TokenKind';

export interface TokensRequest {
  /**
   * create: the new token's name; revoke: its name or id
   */
  'name'?: (string);
  /**
   * create: keys it may use ("*": all; "h100-*": a prefix)
   */
  'keys'?: (string)[];
  'has_max_priority'?: (boolean);
  /**
   * create, with has_max_priority: highest priority it may ask
   */
  'max_priority'?: (number);
  /**
   * create: longest session it may ask (0: the tracker's cap)
   */
  'max_session_timeout_ms'?: (number);
  /**
   * create: when it stops working (0: never)
   */
  'expires_at_ms'?: (number | string);
  'action'?: (_farm_v1_TokenAction);
  /**
   * create: its kind
   */
  'kind'?: (_farm_v1_TokenKind);
}

export interface TokensRequest__Output {
  /**
   * create: the new token's name; revoke: its name or id
   */
  'name': (string);
  /**
   * create: keys it may use ("*": all; "h100-*": a prefix)
   */
  'keys': (string)[];
  'has_max_priority': (boolean);
  /**
   * create, with has_max_priority: highest priority it may ask
   */
  'max_priority': (number);
  /**
   * create: longest session it may ask (0: the tracker's cap)
   */
  'max_session_timeout_ms': (number);
  /**
   * create: when it stops working (0: never)
   */
  'expires_at_ms': (number);
  'action': (_farm_v1_TokenAction__Output);
  /**
   * create: its kind
   */
  'kind': (_farm_v1_TokenKind__Output);
}
