// Original file: protos/farm/v1/session.proto


export interface ArrayWrite {
  'array'?: (number);
  /**
   * bytes
   */
  'offset'?: (number | string);
  'data'?: (Buffer | Uint8Array | string);
  'done'?: (boolean);
}

export interface ArrayWrite__Output {
  'array': (number);
  /**
   * bytes
   */
  'offset': (number);
  'data': (Buffer);
  'done': (boolean);
}
