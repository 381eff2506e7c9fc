// Original file: protos/farm/v1/worker.proto


/**
 * Calls, time evaluations and errors counted since the last report (deltas):
 * at most once a second while serving, and once before WorkerEnded.
 */
export interface WorkerCounters {
  'calls'?: (number);
  'time_evaluations'?: (number);
  /**
   * FarmError code → failed calls and time evaluations.
   */
  'errors'?: ({[key: string]: number});
}

/**
 * Calls, time evaluations and errors counted since the last report (deltas):
 * at most once a second while serving, and once before WorkerEnded.
 */
export interface WorkerCounters__Output {
  'calls': (number);
  'time_evaluations': (number);
  /**
   * FarmError code → failed calls and time evaluations.
   */
  'errors': ({[key: string]: number});
}
