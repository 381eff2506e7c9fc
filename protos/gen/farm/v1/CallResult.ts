// Original file: protos/farm/v1/session.proto


export interface CallResult {
  /**
   * wall time of the call, measured in the worker
   */
  'elapsed_ns'?: (number | string);
}

export interface CallResult__Output {
  /**
   * wall time of the call, measured in the worker
   */
  'elapsed_ns': (number);
}
