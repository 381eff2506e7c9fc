// Original file: protos/farm/v1/host.proto

import type { BoardAction as _farm_v1_BoardAction, BoardAction__Output as _farm_v1_BoardAction__Output } from '../../farm/v1/BoardAction';

export interface BoardCommandRequest {
  /**
   * as in the summary: "<agent>/<board>"
   */
  'board_id'?: (string);
  /**
   * who asks, for the reason shown everywhere (with tokens: the token's name, whatever this says)
   */
  'operator'?: (string);
  /**
   * drain, quarantine: why, in the operator's words (optional, at most 200 characters): "quarantined by alice: fan failing"
   */
  'reason'?: (string);
  'action'?: (_farm_v1_BoardAction);
}

export interface BoardCommandRequest__Output {
  /**
   * as in the summary: "<agent>/<board>"
   */
  'board_id': (string);
  /**
   * who asks, for the reason shown everywhere (with tokens: the token's name, whatever this says)
   */
  'operator': (string);
  /**
   * drain, quarantine: why, in the operator's words (optional, at most 200 characters): "quarantined by alice: fan failing"
   */
  'reason': (string);
  'action': (_farm_v1_BoardAction__Output);
}
