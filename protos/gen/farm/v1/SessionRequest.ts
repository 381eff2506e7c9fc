// Original file: protos/farm/v1/host.proto

import type { Route as _farm_v1_Route, Route__Output as _farm_v1_Route__Output } from '../../farm/v1/Route';

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
   * only this board (AGENT/NAME), which must serve the key; empty: any
   */
  'board_id'?: (string);
  /**
   * how the session's frames travel (ROUTE_AUTO: the default)
   */
  'route'?: (_farm_v1_Route);
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
   * only this board (AGENT/NAME), which must serve the key; empty: any
   */
  'board_id': (string);
  /**
   * how the session's frames travel (ROUTE_AUTO: the default)
   */
  'route': (_farm_v1_Route__Output);
}
