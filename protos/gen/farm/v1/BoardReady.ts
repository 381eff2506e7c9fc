// Original file: protos/farm/v1/agent.proto


/**
 * The agent has a warm worker for this board and no session on it: it may be granted.
 */
export interface BoardReady {
  'board_name'?: (string);
}

/**
 * The agent has a warm worker for this board and no session on it: it may be granted.
 */
export interface BoardReady__Output {
  'board_name': (string);
}
