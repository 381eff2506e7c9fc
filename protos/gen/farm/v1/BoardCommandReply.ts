// Original file: protos/farm/v1/host.proto

import type { BoardInfo as _farm_v1_BoardInfo, BoardInfo__Output as _farm_v1_BoardInfo__Output } from '../../farm/v1/BoardInfo';

export interface BoardCommandReply {
  /**
   * the board after the command (BOARD_STATE_ABSENT: it is not attached; the tracker remembers the command for when it is)
   */
  'board'?: (_farm_v1_BoardInfo | null);
}

export interface BoardCommandReply__Output {
  /**
   * the board after the command (BOARD_STATE_ABSENT: it is not attached; the tracker remembers the command for when it is)
   */
  'board': (_farm_v1_BoardInfo__Output | null);
}
