// Original file: protos/farm/v1/common.proto

/**
 * Where a board stands with the tracker (tracker/registry.ts).
 */
export const BoardState = {
  /**
   * not attached: a board the tracker remembers (BoardCommand replies only)
   */
  BOARD_STATE_ABSENT: 'BOARD_STATE_ABSENT',
  /**
   * attached; its first worker is not ready yet
   */
  BOARD_STATE_STARTING: 'BOARD_STATE_STARTING',
  BOARD_STATE_FREE: 'BOARD_STATE_FREE',
  BOARD_STATE_BUSY: 'BOARD_STATE_BUSY',
  BOARD_STATE_DRAINING: 'BOARD_STATE_DRAINING',
  BOARD_STATE_QUARANTINED: 'BOARD_STATE_QUARANTINED',
} as const;

/**
 * Where a board stands with the tracker (tracker/registry.ts).
 */
export type BoardState =
  /**
   * not attached: a board the tracker remembers (BoardCommand replies only)
   */
  | 'BOARD_STATE_ABSENT'
  | 0
  /**
   * attached; its first worker is not ready yet
   */
  | 'BOARD_STATE_STARTING'
  | 1
  | 'BOARD_STATE_FREE'
  | 2
  | 'BOARD_STATE_BUSY'
  | 3
  | 'BOARD_STATE_DRAINING'
  | 4
  | 'BOARD_STATE_QUARANTINED'
  | 5

/**
 * Where a board stands with the tracker (tracker/registry.ts).
 */
export type BoardState__Output = typeof BoardState[keyof typeof BoardState]
