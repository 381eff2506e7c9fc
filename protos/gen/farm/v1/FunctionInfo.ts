// Original file: protos/farm/v1/session.proto

import type { ParamInfo as _farm_v1_ParamInfo, ParamInfo__Output as _farm_v1_ParamInfo__Output } from '../../farm/v1/ParamInfo';

export interface FunctionInfo {
  'name'?: (string);
  'params'?: (_farm_v1_ParamInfo)[];
}

export interface FunctionInfo__Output {
  'name': (string);
  'params': (_farm_v1_ParamInfo__Output)[];
}
