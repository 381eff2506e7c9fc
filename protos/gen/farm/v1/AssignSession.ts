// Original file: protos/farm/v1/agent.proto

import type { Route as _farm_v1_Route, Route__Output as _farm_v1_Route__Output } from '../../farm/v1/Route';

export interface AssignSession {
  'session_id'?: (string);
  'board_name'?: (string);
  /**
   * the session's ticket: the agent shows it on ServeSession (grpc) and the data port (relay), the host on the direct lane
   */
  'token'?: (string);
  'client_id'?: (string);
  /**
   * the standby lane the grant named (BoardReady.lane_port): the worker listening there takes the session; 0: none
   */
  'lane_port'?: (number);
  /**
   * the grant's: auto (direct, relay if the host asks for it), direct, relay or grpc
   */
  'route'?: (_farm_v1_Route);
  /**
   * the lease ends this long after the grant (0: never): the worker ends a call before it (a call's TIMEOUT, not the session's)
   */
  'session_timeout_ms'?: (number);
}

export interface AssignSession__Output {
  'session_id': (string);
  'board_name': (string);
  /**
   * the session's ticket: the agent shows it on ServeSession (grpc) and the data port (relay), the host on the direct lane
   */
  'token': (string);
  'client_id': (string);
  /**
   * the standby lane the grant named (BoardReady.lane_port): the worker listening there takes the session; 0: none
   */
  'lane_port': (number);
  /**
   * the grant's: auto (direct, relay if the host asks for it), direct, relay or grpc
   */
  'route': (_farm_v1_Route__Output);
  /**
   * the lease ends this long after the grant (0: never): the worker ends a call before it (a call's TIMEOUT, not the session's)
   */
  'session_timeout_ms': (number);
}
