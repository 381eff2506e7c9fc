// Original file: protos/farm/v1/common.proto

import type { BoardHealth as _farm_v1_BoardHealth, BoardHealth__Output as _farm_v1_BoardHealth__Output } from '../../farm/v1/BoardHealth';

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
  'reason'?: (string);
  'from'?: (_farm_v1_BoardHealth);
  'to'?: (_farm_v1_BoardHealth);
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
  'reason': (string);
  'from': (_farm_v1_BoardHealth__Output);
  'to': (_farm_v1_BoardHealth__Output);
}
