// Original file: protos/farm/v1/session.proto

import type { TimeEvaluate as _farm_v1_TimeEvaluate, TimeEvaluate__Output as _farm_v1_TimeEvaluate__Output } from '../../farm/v1/TimeEvaluate';
import type { OutputCheck as _farm_v1_OutputCheck, OutputCheck__Output as _farm_v1_OutputCheck__Output } from '../../farm/v1/OutputCheck';

/**
 * measure() in one request: clear the counters; poison the checked outputs,
 * call once and check them; time (TimeEvaluate); poison, call and check again.
 */
export interface Measure {
  'time'?: (_farm_v1_TimeEvaluate | null);
  'checks'?: (_farm_v1_OutputCheck)[];
}

/**
 * measure() in one request: clear the counters; poison the checked outputs,
 * call once and check them; time (TimeEvaluate); poison, call and check again.
 */
export interface Measure__Output {
  'time': (_farm_v1_TimeEvaluate__Output | null);
  'checks': (_farm_v1_OutputCheck__Output)[];
}
