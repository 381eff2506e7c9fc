// Original file: protos/farm/v1/agent.proto


/**
 * The agent has a warm worker for this board and no session on it: it may be granted.
 */
export interface BoardReady {
  'board_name'?: (string);
  /**
   * the standby lane of the worker that takes the next session: a port of its own on the direct lane's host, listening already (0: none; the data port hands lanes over)
   */
  'lane_port'?: (number);
  /**
   * that worker's random name: the session's ticket is signed for it, and no other worker admits it
   */
  'worker_id'?: (string);
}

/**
 * The agent has a warm worker for this board and no session on it: it may be granted.
 */
export interface BoardReady__Output {
  'board_name': (string);
  /**
   * the standby lane of the worker that takes the next session: a port of its own on the direct lane's host, listening already (0: none; the data port hands lanes over)
   */
  'lane_port': (number);
  /**
   * that worker's random name: the session's ticket is signed for it, and no other worker admits it
   */
  'worker_id': (string);
}
