// Original file: protos/farm/v1/session.proto

import type { Error as _farm_v1_Error, Error__Output as _farm_v1_Error__Output } from '../../farm/v1/Error';
import type { Ok as _farm_v1_Ok, Ok__Output as _farm_v1_Ok__Output } from '../../farm/v1/Ok';
import type { Data as _farm_v1_Data, Data__Output as _farm_v1_Data__Output } from '../../farm/v1/Data';
import type { DirListing as _farm_v1_DirListing, DirListing__Output as _farm_v1_DirListing__Output } from '../../farm/v1/DirListing';
import type { ModuleInfo as _farm_v1_ModuleInfo, ModuleInfo__Output as _farm_v1_ModuleInfo__Output } from '../../farm/v1/ModuleInfo';
import type { ArrayInfo as _farm_v1_ArrayInfo, ArrayInfo__Output as _farm_v1_ArrayInfo__Output } from '../../farm/v1/ArrayInfo';
import type { CallResult as _farm_v1_CallResult, CallResult__Output as _farm_v1_CallResult__Output } from '../../farm/v1/CallResult';
import type { TimeResult as _farm_v1_TimeResult, TimeResult__Output as _farm_v1_TimeResult__Output } from '../../farm/v1/TimeResult';
import type { StatsResult as _farm_v1_StatsResult, StatsResult__Output as _farm_v1_StatsResult__Output } from '../../farm/v1/StatsResult';
import type { MeasureResult as _farm_v1_MeasureResult, MeasureResult__Output as _farm_v1_MeasureResult__Output } from '../../farm/v1/MeasureResult';
import type { Grant as _farm_v1_Grant, Grant__Output as _farm_v1_Grant__Output } from '../../farm/v1/Grant';
import type { SessionEnd as _farm_v1_SessionEnd, SessionEnd__Output as _farm_v1_SessionEnd__Output } from '../../farm/v1/SessionEnd';
import type { FpgaProgrammed as _farm_v1_FpgaProgrammed, FpgaProgrammed__Output as _farm_v1_FpgaProgrammed__Output } from '../../farm/v1/FpgaProgrammed';

export interface BoardFrame {
  'id'?: (number);
  'error'?: (_farm_v1_Error | null);
  'ok'?: (_farm_v1_Ok | null);
  'data'?: (_farm_v1_Data | null);
  'listing'?: (_farm_v1_DirListing | null);
  'module'?: (_farm_v1_ModuleInfo | null);
  'array'?: (_farm_v1_ArrayInfo | null);
  'call'?: (_farm_v1_CallResult | null);
  'time'?: (_farm_v1_TimeResult | null);
  'stats'?: (_farm_v1_StatsResult | null);
  'measured'?: (_farm_v1_MeasureResult | null);
  /**
   * id 0: the tracker's answer to a session request
   */
  'grant'?: (_farm_v1_Grant | null);
  /**
   * id 0: the session is over
   */
  'end'?: (_farm_v1_SessionEnd | null);
  'programmed'?: (_farm_v1_FpgaProgrammed | null);
  'result'?: "error"|"ok"|"data"|"listing"|"module"|"array"|"call"|"time"|"stats"|"measured"|"grant"|"end"|"programmed";
}

export interface BoardFrame__Output {
  'id': (number);
  'error'?: (_farm_v1_Error__Output | null);
  'ok'?: (_farm_v1_Ok__Output | null);
  'data'?: (_farm_v1_Data__Output | null);
  'listing'?: (_farm_v1_DirListing__Output | null);
  'module'?: (_farm_v1_ModuleInfo__Output | null);
  'array'?: (_farm_v1_ArrayInfo__Output | null);
  'call'?: (_farm_v1_CallResult__Output | null);
  'time'?: (_farm_v1_TimeResult__Output | null);
  'stats'?: (_farm_v1_StatsResult__Output | null);
  'measured'?: (_farm_v1_MeasureResult__Output | null);
  /**
   * id 0: the tracker's answer to a session request
   */
  'grant'?: (_farm_v1_Grant__Output | null);
  /**
   * id 0: the session is over
   */
  'end'?: (_farm_v1_SessionEnd__Output | null);
  'programmed'?: (_farm_v1_FpgaProgrammed__Output | null);
  'result'?: "error"|"ok"|"data"|"listing"|"module"|"array"|"call"|"time"|"stats"|"measured"|"grant"|"end"|"programmed";
}
