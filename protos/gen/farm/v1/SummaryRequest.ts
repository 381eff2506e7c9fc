// Original file: protos/farm/v1/host.proto


export interface SummaryRequest {
  /**
   * only this key's boards and queue (empty: every key)
   */
  'key'?: (string);
  /**
   * also each board's last health changes (BoardInfo.health_history)
   */
  'health_history'?: (boolean);
}

export interface SummaryRequest__Output {
  /**
   * only this key's boards and queue (empty: every key)
   */
  'key': (string);
  /**
   * also each board's last health changes (BoardInfo.health_history)
   */
  'health_history': (boolean);
}
