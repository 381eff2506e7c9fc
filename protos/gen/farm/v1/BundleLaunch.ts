// Original file: protos/farm/v1/bundle.proto

import type { Long } from '@grpc/proto-loader';

export interface BundleLaunch {
  /**
   * [x, y, z], each 1 to 2^31 - 1
   */
  'grid'?: (number)[];
  /**
   * [x, y, z], each 1 to 2^31 - 1
   */
  'block'?: (number)[];
  /**
   * dynamic shared memory, at most 2^53 - 1
   */
  'shared_mem_bytes'?: (number | string | Long);
}

export interface BundleLaunch__Output {
  /**
   * [x, y, z], each 1 to 2^31 - 1
   */
  'grid': (number)[];
  /**
   * [x, y, z], each 1 to 2^31 - 1
   */
  'block': (number)[];
  /**
   * dynamic shared memory, at most 2^53 - 1
   */
  'shared_mem_bytes': (number);
}
