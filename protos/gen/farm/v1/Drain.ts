// Original file: protos/farm/v1/agent.proto


/**
 * Finish current sessions, accept no new ones.
 */
export interface Drain {
  /**
   * empty: every board of the agent
   */
  'board_name'?: (string);
}

/**
 * Finish current sessions, accept no new ones.
 */
export interface Drain__Output {
  /**
   * empty: every board of the agent
   */
  'board_name': (string);
}
