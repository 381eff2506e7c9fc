// Original file: protos/farm/v1/session.proto


export interface Data {
  'data'?: (Buffer | Uint8Array | string);
  'offset'?: (number | string);
  'total_bytes'?: (number | string);
  'done'?: (boolean);
}

export interface Data__Output {
  'data': (Buffer);
  'offset': (number);
  'total_bytes': (number);
  'done': (boolean);
}
