// Original file: protos/farm/v1/session.proto

import type { Arg as _farm_v1_Arg, Arg__Output as _farm_v1_Arg__Output } from '../../farm/v1/Arg';
import type { Launch as _farm_v1_Launch, Launch__Output as _farm_v1_Launch__Output } from '../../farm/v1/Launch';

export interface Call {
  'module'?: (number);
  'function'?: (string);
  'args'?: (_farm_v1_Arg)[];
  /**
   * 0: the worker's default call timeout
   */
  'timeout_ms'?: (number);
  /**
   * CUDA: overrides the bundle's launch; needed when it has none
   */
  'launch'?: (_farm_v1_Launch | null);
}

export interface Call__Output {
  'module': (number);
  'function': (string);
  'args': (_farm_v1_Arg__Output)[];
  /**
   * 0: the worker's default call timeout
   */
  'timeout_ms': (number);
  /**
   * CUDA: overrides the bundle's launch; needed when it has none
   */
  'launch': (_farm_v1_Launch__Output | null);
}
