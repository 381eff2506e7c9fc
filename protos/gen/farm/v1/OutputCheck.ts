// Original file: protos/farm/v1/session.proto


/**
 * An output to check: the array, what it must hold, the tolerance
 * (|got - want| <= atol + rtol * |want|).
 */
export interface OutputCheck {
  'array'?: (number);
  /**
   * the reference, in the array's dtype
   */
  'expect'?: (Buffer | Uint8Array | string);
  'atol'?: (number | string);
  'rtol'?: (number | string);
}

/**
 * An output to check: the array, what it must hold, the tolerance
 * (|got - want| <= atol + rtol * |want|).
 */
export interface OutputCheck__Output {
  'array': (number);
  /**
   * the reference, in the array's dtype
   */
  'expect': (Buffer);
  'atol': (number);
  'rtol': (number);
}
