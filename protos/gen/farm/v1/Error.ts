// Original file: protos/farm/v1/common.proto


/**
 * A failure with a stable code (see protos/errors.ts for the closed set).
 */
export interface Error {
  'code'?: (string);
  'message'?: (string);
  /**
   * FarmError.details as JSON text of one object, at most 2048 bytes (entries
   * that do not fit are left out); empty: none. Facts for code to act on, such
   * as {"cuda":"CUDA_ERROR_ILLEGAL_ADDRESS","sticky":true}. A receiver ignores
   * text that does not parse as a JSON object.
   */
  'details_json'?: (string);
}

/**
 * A failure with a stable code (see protos/errors.ts for the closed set).
 */
export interface Error__Output {
  'code': (string);
  'message': (string);
  /**
   * FarmError.details as JSON text of one object, at most 2048 bytes (entries
   * that do not fit are left out); empty: none. Facts for code to act on, such
   * as {"cuda":"CUDA_ERROR_ILLEGAL_ADDRESS","sticky":true}. A receiver ignores
   * text that does not parse as a JSON object.
   */
  'details_json': (string);
}
