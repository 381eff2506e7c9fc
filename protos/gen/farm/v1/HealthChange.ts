// Original file: protos/farm/v1/common.proto


/**
 * One move of a board's health (tracker/health.ts). Kept, like the board's
 * health and operator commands, across the tracker's restarts when it has a
 * state directory (docs/architecture.md, "Tracker restarts").
 */
export interface HealthChange {
  /**
   * the tracker's clock, ms since the epoch
   */
  'at_ms'?: (number | string);
  /**
   * healthy | suspect | quarantined
   */
  'from'?: (string);
  'to'?: (string);
  'reason'?: (string);
}

/**
 * One move of a board's health (tracker/health.ts). Kept, like the board's
 * health and operator commands, across the tracker's restarts when it has a
 * state directory (docs/architecture.md, "Tracker restarts").
 */
export interface HealthChange__Output {
  /**
   * the tracker's clock, ms since the epoch
   */
  'at_ms': (number);
  /**
   * healthy | suspect | quarantined
   */
  'from': (string);
  'to': (string);
  'reason': (string);
}
