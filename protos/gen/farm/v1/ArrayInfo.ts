// Original file: protos/farm/v1/session.proto


export interface ArrayInfo {
  'array'?: (number);
  'nbytes'?: (number | string);
}

export interface ArrayInfo__Output {
  'array': (number);
  'nbytes': (number);
}
