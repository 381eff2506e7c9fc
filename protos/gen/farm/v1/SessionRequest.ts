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
   * fairness unit within a priority
   */
  'client_id'?: (string);
  /**
   * 0: no session timeout
   */
  'session_timeout_ms'?: (number);
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
   * fairness unit within a priority
   */
  'client_id': (string);
  /**
   * 0: no session timeout
   */
  'session_timeout_ms': (number);
}
