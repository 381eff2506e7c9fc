// Original file: protos/farm/v1/session.proto

import type { Arg as _farm_v1_Arg, Arg__Output as _farm_v1_Arg__Output } from '../../farm/v1/Arg';

export interface Call {
  'module'?: (number);
  'function'?: (string);
  'args'?: (_farm_v1_Arg)[];
  /**
   * 0: the worker's default call timeout
   */
  'timeout_ms'?: (number);
}

export interface Call__Output {
  'module': (number);
  'function': (string);
  'args': (_farm_v1_Arg__Output)[];
  /**
   * 0: the worker's default call timeout
   */
  'timeout_ms': (number);
}
