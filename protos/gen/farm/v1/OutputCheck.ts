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
  /**
   * The reference held in this board array instead, `expect` empty: a
   * reference larger than a message (a 4096x4096 float32 output is 64 MiB)
   * is sent once as an array of the session and named here. 0: in `expect`.
   */
  'expect_array'?: (number);
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
  /**
   * The reference held in this board array instead, `expect` empty: a
   * reference larger than a message (a 4096x4096 float32 output is 64 MiB)
   * is sent once as an array of the session and named here. 0: in `expect`.
   */
  'expect_array': (number);
}
