// Original file: protos/farm/v1/agent.proto


export interface AssignSession {
  'session_id'?: (string);
  'board_name'?: (string);
  /**
   * the session's ticket: the worker's on ServeSession, the host's on the direct lane
   */
  'token'?: (string);
  'client_id'?: (string);
  /**
   * direct | relay | grpc | auto (direct, relay if the host asks for it)
   */
  'route'?: (string);
  /**
   * the standby lane the grant named (BoardReady.lane_port): the worker listening there takes the session; 0: none
   */
  'lane_port'?: (number);
}

export interface AssignSession__Output {
  'session_id': (string);
  'board_name': (string);
  /**
   * the session's ticket: the worker's on ServeSession, the host's on the direct lane
   */
  'token': (string);
  'client_id': (string);
  /**
   * direct | relay | grpc | auto (direct, relay if the host asks for it)
   */
  'route': (string);
  /**
   * the standby lane the grant named (BoardReady.lane_port): the worker listening there takes the session; 0: none
   */
  'lane_port': (number);
}
