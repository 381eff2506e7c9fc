// Original file: protos/farm/v1/session.proto

import type { TimeResult as _farm_v1_TimeResult, TimeResult__Output as _farm_v1_TimeResult__Output } from '../../farm/v1/TimeResult';

export interface MeasureResult {
  /**
   * absent when a check failed before timing
   */
  'time'?: (_farm_v1_TimeResult | null);
  /**
   * empty: every output matched, before and after
   */
  'wrong'?: (string);
  /**
   * the board's counters for this measurement alone
   */
  'counters'?: ({[key: string]: number | string});
}

export interface MeasureResult__Output {
  /**
   * absent when a check failed before timing
   */
  'time': (_farm_v1_TimeResult__Output | null);
  /**
   * empty: every output matched, before and after
   */
  'wrong': (string);
  /**
   * the board's counters for this measurement alone
   */
  'counters': ({[key: string]: number});
}
