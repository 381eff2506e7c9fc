// Original file: protos/farm/v1/session.proto

import type { Upload as _farm_v1_Upload, Upload__Output as _farm_v1_Upload__Output } from '../../farm/v1/Upload';
import type { Download as _farm_v1_Download, Download__Output as _farm_v1_Download__Output } from '../../farm/v1/Download';
import type { ListDir as _farm_v1_ListDir, ListDir__Output as _farm_v1_ListDir__Output } from '../../farm/v1/ListDir';
import type { Remove as _farm_v1_Remove, Remove__Output as _farm_v1_Remove__Output } from '../../farm/v1/Remove';
import type { LoadModule as _farm_v1_LoadModule, LoadModule__Output as _farm_v1_LoadModule__Output } from '../../farm/v1/LoadModule';
import type { ArrayAlloc as _farm_v1_ArrayAlloc, ArrayAlloc__Output as _farm_v1_ArrayAlloc__Output } from '../../farm/v1/ArrayAlloc';
import type { ArrayWrite as _farm_v1_ArrayWrite, ArrayWrite__Output as _farm_v1_ArrayWrite__Output } from '../../farm/v1/ArrayWrite';
import type { ArrayRead as _farm_v1_ArrayRead, ArrayRead__Output as _farm_v1_ArrayRead__Output } from '../../farm/v1/ArrayRead';
import type { ArrayFree as _farm_v1_ArrayFree, ArrayFree__Output as _farm_v1_ArrayFree__Output } from '../../farm/v1/ArrayFree';
import type { Call as _farm_v1_Call, Call__Output as _farm_v1_Call__Output } from '../../farm/v1/Call';
import type { TimeEvaluate as _farm_v1_TimeEvaluate, TimeEvaluate__Output as _farm_v1_TimeEvaluate__Output } from '../../farm/v1/TimeEvaluate';
import type { Stats as _farm_v1_Stats, Stats__Output as _farm_v1_Stats__Output } from '../../farm/v1/Stats';
import type { ClearStats as _farm_v1_ClearStats, ClearStats__Output as _farm_v1_ClearStats__Output } from '../../farm/v1/ClearStats';
import type { Close as _farm_v1_Close, Close__Output as _farm_v1_Close__Output } from '../../farm/v1/Close';
import type { Measure as _farm_v1_Measure, Measure__Output as _farm_v1_Measure__Output } from '../../farm/v1/Measure';
import type { ArrayFill as _farm_v1_ArrayFill, ArrayFill__Output as _farm_v1_ArrayFill__Output } from '../../farm/v1/ArrayFill';
import type { ProgramFpga as _farm_v1_ProgramFpga, ProgramFpga__Output as _farm_v1_ProgramFpga__Output } from '../../farm/v1/ProgramFpga';
import type { Output as _farm_v1_Output, Output__Output as _farm_v1_Output__Output } from '../../farm/v1/Output';

export interface HostFrame {
  'id'?: (number);
  'upload'?: (_farm_v1_Upload | null);
  'download'?: (_farm_v1_Download | null);
  'listdir'?: (_farm_v1_ListDir | null);
  'remove'?: (_farm_v1_Remove | null);
  'load_module'?: (_farm_v1_LoadModule | null);
  'array_alloc'?: (_farm_v1_ArrayAlloc | null);
  'array_write'?: (_farm_v1_ArrayWrite | null);
  'array_read'?: (_farm_v1_ArrayRead | null);
  'array_free'?: (_farm_v1_ArrayFree | null);
  'call'?: (_farm_v1_Call | null);
  'time_evaluate'?: (_farm_v1_TimeEvaluate | null);
  'stats'?: (_farm_v1_Stats | null);
  'clear_stats'?: (_farm_v1_ClearStats | null);
  'close'?: (_farm_v1_Close | null);
  'measure'?: (_farm_v1_Measure | null);
  'array_fill'?: (_farm_v1_ArrayFill | null);
  'program_fpga'?: (_farm_v1_ProgramFpga | null);
  'output'?: (_farm_v1_Output | null);
  'op'?: "upload"|"download"|"listdir"|"remove"|"load_module"|"array_alloc"|"array_write"|"array_read"|"array_free"|"call"|"time_evaluate"|"stats"|"clear_stats"|"close"|"measure"|"array_fill"|"program_fpga"|"output";
}

export interface HostFrame__Output {
  'id': (number);
  'upload'?: (_farm_v1_Upload__Output | null);
  'download'?: (_farm_v1_Download__Output | null);
  'listdir'?: (_farm_v1_ListDir__Output | null);
  'remove'?: (_farm_v1_Remove__Output | null);
  'load_module'?: (_farm_v1_LoadModule__Output | null);
  'array_alloc'?: (_farm_v1_ArrayAlloc__Output | null);
  'array_write'?: (_farm_v1_ArrayWrite__Output | null);
  'array_read'?: (_farm_v1_ArrayRead__Output | null);
  'array_free'?: (_farm_v1_ArrayFree__Output | null);
  'call'?: (_farm_v1_Call__Output | null);
  'time_evaluate'?: (_farm_v1_TimeEvaluate__Output | null);
  'stats'?: (_farm_v1_Stats__Output | null);
  'clear_stats'?: (_farm_v1_ClearStats__Output | null);
  'close'?: (_farm_v1_Close__Output | null);
  'measure'?: (_farm_v1_Measure__Output | null);
  'array_fill'?: (_farm_v1_ArrayFill__Output | null);
  'program_fpga'?: (_farm_v1_ProgramFpga__Output | null);
  'output'?: (_farm_v1_Output__Output | null);
  'op'?: "upload"|"download"|"listdir"|"remove"|"load_module"|"array_alloc"|"array_write"|"array_read"|"array_free"|"call"|"time_evaluate"|"stats"|"clear_stats"|"close"|"measure"|"array_fill"|"program_fpga"|"output";
}
