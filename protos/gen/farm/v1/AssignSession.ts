// Original file: protos/farm/v1/agent.proto


export interface AssignSession {
  'session_id'?: (string);
  'board_name'?: (string);
  /**
   * the worker presents it on ServeSession
   */
  'token'?: (string);
  /**
   * 0: none
   */
  'session_timeout_ms'?: (number);
  'client_id'?: (string);
}

export interface AssignSession__Output {
  'session_id': (string);
  'board_name': (string);
  /**
   * the worker presents it on ServeSession
   */
  'token': (string);
  /**
   * 0: none
   */
  'session_timeout_ms': (number);
  'client_id': (string);
}
