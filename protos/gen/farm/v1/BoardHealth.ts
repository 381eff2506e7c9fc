// Original file: protos/farm/v1/common.proto

/**
 * A board's health (tracker/health.ts).
 */
export const BoardHealth = {
  BOARD_HEALTH_UNSPECIFIED: 'BOARD_HEALTH_UNSPECIFIED',
  BOARD_HEALTH_HEALTHY: 'BOARD_HEALTH_HEALTHY',
  BOARD_HEALTH_SUSPECT: 'BOARD_HEALTH_SUSPECT',
  BOARD_HEALTH_QUARANTINED: 'BOARD_HEALTH_QUARANTINED',
} as const;

/**
 * A board's health (tracker/health.ts).
 */
export type BoardHealth =
  | 'BOARD_HEALTH_UNSPECIFIED'
  | 0
  | 'BOARD_HEALTH_HEALTHY'
  | 1
  | 'BOARD_HEALTH_SUSPECT'
  | 2
  | 'BOARD_HEALTH_QUARANTINED'
  | 3

/**
 * A board's health (tracker/health.ts).
 */
export type BoardHealth__Output = typeof BoardHealth[keyof typeof BoardHealth]
