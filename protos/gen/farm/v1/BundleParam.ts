// Original file: protos/farm/v1/bundle.proto

import type { BundleShape as _farm_v1_BundleShape, BundleShape__Output as _farm_v1_BundleShape__Output } from '../../farm/v1/BundleShape';

export interface BundleParam {
  'name'?: (string);
  /**
   * buffer | scalar. A string, not an enum, unlike the other closed sets: the bundle is content-addressed, so its bytes changing is a BUNDLE_VERSION bump.
   */
  'kind'?: (string);
  /**
   * protos/dtype.ts DTYPES
   */
  'dtype'?: (string);
  /**
   * a buffer's fixed shape; absent: any shape (present and empty: 0-d)
   */
  'shape'?: (_farm_v1_BundleShape | null);
}

export interface BundleParam__Output {
  'name': (string);
  /**
   * buffer | scalar. A string, not an enum, unlike the other closed sets: the bundle is content-addressed, so its bytes changing is a BUNDLE_VERSION bump.
   */
  'kind': (string);
  /**
   * protos/dtype.ts DTYPES
   */
  'dtype': (string);
  /**
   * a buffer's fixed shape; absent: any shape (present and empty: 0-d)
   */
  'shape': (_farm_v1_BundleShape__Output | null);
}
