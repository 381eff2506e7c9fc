// Original file: protos/farm/v1/session.proto

import type { FunctionInfo as _farm_v1_FunctionInfo, FunctionInfo__Output as _farm_v1_FunctionInfo__Output } from '../../farm/v1/FunctionInfo';

export interface ModuleInfo {
  'module'?: (number);
  'target'?: (string);
  'functions'?: (_farm_v1_FunctionInfo)[];
}

export interface ModuleInfo__Output {
  'module': (number);
  'target': (string);
  'functions': (_farm_v1_FunctionInfo__Output)[];
}
