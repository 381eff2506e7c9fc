// Original file: protos/farm/v1/session.proto


export interface TimeResult {
  /**
   * seconds per call, one per repeat
   */
  'results_s'?: (number | string)[];
  /**
   * the final number of calls per repeat
   */
  'number'?: (number);
  /**
   * board conditions at the time (clocks, ...)
   */
  'conditions'?: ({[key: string]: string});
  /**
   * with target_rse: "precision", "budget" or "max_repeats"; else "repeat"
   */
  'stopped_by'?: (string);
}

export interface TimeResult__Output {
  /**
   * seconds per call, one per repeat
   */
  'results_s': (number)[];
  /**
   * the final number of calls per repeat
   */
  'number': (number);
  /**
   * board conditions at the time (clocks, ...)
   */
  'conditions': ({[key: string]: string});
  /**
   * with target_rse: "precision", "budget" or "max_repeats"; else "repeat"
   */
  'stopped_by': (string);
}
