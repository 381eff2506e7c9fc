// Original file: protos/farm/v1/common.proto


/**
 * A failure with a stable code (see protos/errors.ts for the closed set).
 */
export interface Error {
  'code'?: (string);
  'message'?: (string);
}

/**
 * A failure with a stable code (see protos/errors.ts for the closed set).
 */
export interface Error__Output {
  'code': (string);
  'message': (string);
}
