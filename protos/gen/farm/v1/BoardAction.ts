// Original file: protos/farm/v1/host.proto

/**
 * An operator's command on one board.
 */
export const BoardAction = {
  BOARD_ACTION_UNSPECIFIED: 'BOARD_ACTION_UNSPECIFIED',
  /**
   * no new sessions
   */
  BOARD_ACTION_DRAIN: 'BOARD_ACTION_DRAIN',
  BOARD_ACTION_QUARANTINE: 'BOARD_ACTION_QUARANTINE',
  BOARD_ACTION_RESTORE: 'BOARD_ACTION_RESTORE',
} as const;

/**
 * An operator's command on one board.
 */
export type BoardAction =
  | 'BOARD_ACTION_UNSPECIFIED'
  | 0
  /**
   * no new sessions
   */
  | 'BOARD_ACTION_DRAIN'
  | 1
  | 'BOARD_ACTION_QUARANTINE'
  | 2
  | 'BOARD_ACTION_RESTORE'
  | 3

/**
 * An operator's command on one board.
 */
export type BoardAction__Output = typeof BoardAction[keyof typeof BoardAction]
