// Original file: protos/farm/v1/session.proto


/**
 * A CUDA launch configuration given at call time (bundle.ts LaunchConfig).
 */
export interface Launch {
  /**
   * [x, y, z]
   */
  'grid'?: (number)[];
  /**
   * [x, y, z]
   */
  'block'?: (number)[];
  /**
   * dynamic shared memory
   */
  'shared_mem_bytes'?: (number);
}

/**
 * A CUDA launch configuration given at call time (bundle.ts LaunchConfig).
 */
export interface Launch__Output {
  /**
   * [x, y, z]
   */
  'grid': (number)[];
  /**
   * [x, y, z]
   */
  'block': (number)[];
  /**
   * dynamic shared memory
   */
  'shared_mem_bytes': (number);
}
