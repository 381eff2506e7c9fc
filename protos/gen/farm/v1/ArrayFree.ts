// Original file: protos/farm/v1/session.proto


export interface ArrayFree {
  'array'?: (number);
}

export interface ArrayFree__Output {
  'array': (number);
}
