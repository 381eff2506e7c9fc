// Original file: protos/farm/v1/session.proto


export interface Download {
  'name'?: (string);
}

export interface Download__Output {
  'name': (string);
}
