// Original file: protos/farm/v1/host.proto


/**
 * Refused (PERMISSION_DENIED) with a wrong token or from another identity than the one granted.
 */
export interface ReleaseRequest {
  'session_id'?: (string);
  'token'?: (string);
}

/**
 * Refused (PERMISSION_DENIED) with a wrong token or from another identity than the one granted.
 */
export interface ReleaseRequest__Output {
  'session_id': (string);
  'token': (string);
}
