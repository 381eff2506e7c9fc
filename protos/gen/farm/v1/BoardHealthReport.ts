// Original file: protos/farm/v1/agent.proto


/**
 * A canary run or an infrastructure error on one board (tracker/health.ts).
 */
export interface BoardHealthReport {
  'board_name'?: (string);
  /**
   * canary | infra
   */
  'kind'?: (string);
  /**
   * canary: passed
   */
  'ok'?: (boolean);
  /**
   * what failed, or what the canary checked
   */
  'reason'?: (string);
  'duration_ms'?: (number | string);
  /**
   * When the agent saw the result (its own clock, ms since the epoch; 0: an
   * older agent). The agent repeats each board's last canary at every attach;
   * a tracker that remembers the board applied it already, and knows it by
   * this time (tracker/health.ts).
   */
  'at_ms'?: (number | string);
}

/**
 * A canary run or an infrastructure error on one board (tracker/health.ts).
 */
export interface BoardHealthReport__Output {
  'board_name': (string);
  /**
   * canary | infra
   */
  'kind': (string);
  /**
   * canary: passed
   */
  'ok': (boolean);
  /**
   * what failed, or what the canary checked
   */
  'reason': (string);
  'duration_ms': (number);
  /**
   * When the agent saw the result (its own clock, ms since the epoch; 0: an
   * older agent). The agent repeats each board's last canary at every attach;
   * a tracker that remembers the board applied it already, and knows it by
   * this time (tracker/health.ts).
   */
  'at_ms': (number);
}
