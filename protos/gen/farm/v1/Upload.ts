// Original file: protos/farm/v1/session.proto


export interface Upload {
  'name'?: (string);
  /**
   * announced size, checked against the caps up front
   */
  'total_bytes'?: (number | string);
  'data'?: (Buffer | Uint8Array | string);
  'done'?: (boolean);
}

export interface Upload__Output {
  'name': (string);
  /**
   * announced size, checked against the caps up front
   */
  'total_bytes': (number);
  'data': (Buffer);
  'done': (boolean);
}
