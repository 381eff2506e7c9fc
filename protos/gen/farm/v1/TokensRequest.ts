// Original file: protos/farm/v1/host.proto


export interface TokensRequest {
  /**
   * create | list | revoke
   */
  'action'?: (string);
  /**
   * create: the new token's name; revoke: its name or id
   */
  'name'?: (string);
  /**
   * create: agent | client | operator
   */
  'kind'?: (string);
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
}

export interface TokensRequest__Output {
  /**
   * create | list | revoke
   */
  'action': (string);
  /**
   * create: the new token's name; revoke: its name or id
   */
  'name': (string);
  /**
   * create: agent | client | operator
   */
  'kind': (string);
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
}
