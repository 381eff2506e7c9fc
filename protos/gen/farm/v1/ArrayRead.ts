// Original file: protos/farm/v1/session.proto


export interface ArrayRead {
  'array'?: (number);
}

export interface ArrayRead__Output {
  'array': (number);
}
