// Original file: protos/farm/v1/host.proto

import type { TokenInfo as _farm_v1_TokenInfo, TokenInfo__Output as _farm_v1_TokenInfo__Output } from '../../farm/v1/TokenInfo';

export interface TokensReply {
  /**
   * create: the new token, shown this once
   */
  'token'?: (string);
  /**
   * list: every token; create, revoke: the one changed
   */
  'tokens'?: (_farm_v1_TokenInfo)[];
}

export interface TokensReply__Output {
  /**
   * create: the new token, shown this once
   */
  'token': (string);
  /**
   * list: every token; create, revoke: the one changed
   */
  'tokens': (_farm_v1_TokenInfo__Output)[];
}
