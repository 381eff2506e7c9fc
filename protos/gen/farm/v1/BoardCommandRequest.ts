// Original file: protos/farm/v1/host.proto


export interface BoardCommandRequest {
  /**
   * as in the summary: "<agent>/<board>"
   */
  'board_id'?: (string);
  /**
   * drain | quarantine | restore
   */
  'action'?: (string);
  /**
   * who asks, for the reason shown everywhere (with tokens: the token's name, whatever this says)
   */
  'operator'?: (string);
  /**
   * drain, quarantine: why, in the operator's words (optional, at most 200 characters): "quarantined by alice: fan failing"
   */
  'reason'?: (string);
}

export interface BoardCommandRequest__Output {
  /**
   * as in the summary: "<agent>/<board>"
   */
  'board_id': (string);
  /**
   * drain | quarantine | restore
   */
  'action': (string);
  /**
   * who asks, for the reason shown everywhere (with tokens: the token's name, whatever this says)
   */
  'operator': (string);
  /**
   * drain, quarantine: why, in the operator's words (optional, at most 200 characters): "quarantined by alice: fan failing"
   */
  'reason': (string);
}
