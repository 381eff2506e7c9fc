// Original file: protos/farm/v1/session.proto


/**
 * Fills an array on the board from the seeded generator of domain/random.ts,
 * which hosts run too for their references: inputs without the network.
 */
export interface ArrayFill {
  'array'?: (number);
  'seed'?: (number);
  /**
   * the range, resolved by the host (random.ts fillRange)
   */
  'low'?: (number | string);
  'high'?: (number | string);
  /**
   * floating point arrays: whole numbers in [low, high]
   */
  'integers'?: (boolean);
}

/**
 * Fills an array on the board from the seeded generator of domain/random.ts,
 * which hosts run too for their references: inputs without the network.
 */
export interface ArrayFill__Output {
  'array': (number);
  'seed': (number);
  /**
   * the range, resolved by the host (random.ts fillRange)
   */
  'low': (number);
  'high': (number);
  /**
   * floating point arrays: whole numbers in [low, high]
   */
  'integers': (boolean);
}
