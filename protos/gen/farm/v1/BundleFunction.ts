// Original file: protos/farm/v1/bundle.proto

import type { BundleParam as _farm_v1_BundleParam, BundleParam__Output as _farm_v1_BundleParam__Output } from '../../farm/v1/BundleParam';
import type { BundleLaunch as _farm_v1_BundleLaunch, BundleLaunch__Output as _farm_v1_BundleLaunch__Output } from '../../farm/v1/BundleLaunch';

export interface BundleFunction {
  /**
   * a C identifier, unique in the bundle
   */
  'name'?: (string);
  'params'?: (_farm_v1_BundleParam)[];
  /**
   * CUDA: the launch fixed at compile time; absent: every call gives one
   */
  'launch'?: (_farm_v1_BundleLaunch | null);
}

export interface BundleFunction__Output {
  /**
   * a C identifier, unique in the bundle
   */
  'name': (string);
  'params': (_farm_v1_BundleParam__Output)[];
  /**
   * CUDA: the launch fixed at compile time; absent: every call gives one
   */
  'launch': (_farm_v1_BundleLaunch__Output | null);
}
