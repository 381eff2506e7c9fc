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
}
