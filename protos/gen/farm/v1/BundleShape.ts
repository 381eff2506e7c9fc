// Original file: protos/farm/v1/bundle.proto

import type { Long } from '@grpc/proto-loader';

export interface BundleShape {
  /**
   * positive, at most 2^53 - 1 (exact in a JavaScript number)
   */
  'dims'?: (number | string | Long)[];
}

export interface BundleShape__Output {
  /**
   * positive, at most 2^53 - 1 (exact in a JavaScript number)
   */
  'dims': (number)[];
}
