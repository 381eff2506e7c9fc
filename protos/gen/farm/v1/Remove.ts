// Original file: protos/farm/v1/session.proto


export interface Remove {
  'name'?: (string);
}

export interface Remove__Output {
  'name': (string);
}
