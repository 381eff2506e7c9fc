// Original file: protos/farm/v1/host.proto


export interface SessionRequest {
  'key'?: (string);
  /**
   * larger is served first (TVM: 1 by default)
   */
  'priority'?: (number);
  /**
   * every label must match
   */
  'labels'?: ({[key: string]: string});
  /**
   * 0: the tracker's default wait
   */
  'deadline_ms'?: (number);
  /**
   * fairness unit within a priority (with tokens: the token's name, whatever this says)
   */
  'client_id'?: (string);
  /**
   * 0: the longest the tracker (and the token) allows; never unlimited
   */
  'session_timeout_ms'?: (number);
  /**
   * auto (empty) | direct | relay | grpc: how the session's frames travel
   */
  'route'?: (string);
  /**
   * only this board (AGENT/NAME), which must serve the key; empty: any
   */
  'board_id'?: (string);
}

export interface SessionRequest__Output {
  'key': (string);
  /**
   * larger is served first (TVM: 1 by default)
   */
  'priority': (number);
  /**
   * every label must match
   */
  'labels': ({[key: string]: string});
  /**
   * 0: the tracker's default wait
   */
  'deadline_ms': (number);
  /**
   * fairness unit within a priority (with tokens: the token's name, whatever this says)
   */
  'client_id': (string);
  /**
   * 0: the longest the tracker (and the token) allows; never unlimited
   */
  'session_timeout_ms': (number);
  /**
   * auto (empty) | direct | relay | grpc: how the session's frames travel
   */
  'route': (string);
  /**
   * only this board (AGENT/NAME), which must serve the key; empty: any
   */
  'board_id': (string);
}
