// Original file: protos/farm/v1/session.proto


export interface LoadModule {
  'name'?: (string);
}

export interface LoadModule__Output {
  'name': (string);
}
