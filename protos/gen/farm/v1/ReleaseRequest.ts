// Original file: protos/farm/v1/host.proto


export interface ReleaseRequest {
  'session_id'?: (string);
  'token'?: (string);
}

export interface ReleaseRequest__Output {
  'session_id': (string);
  'token': (string);
}
