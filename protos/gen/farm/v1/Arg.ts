// Original file: protos/farm/v1/session.proto

import type { Long } from '@grpc/proto-loader';

export interface Arg {
  /**
   * a remote array id
   */
  'array'?: (number);
  'float_value'?: (number | string);
  'int_value'?: (number | string | Long);
  'value'?: "array"|"float_value"|"int_value";
}

export interface Arg__Output {
  /**
   * a remote array id
   */
  'array'?: (number);
  'float_value'?: (number);
  'int_value'?: (number);
  'value'?: "array"|"float_value"|"int_value";
}
