// Original file: protos/farm/v1/common.proto


/**
 * One timed canary run of a board (BoardHealthReport.kernel_ns), as the
 * tracker received it.
 */
export interface CanaryTiming {
  /**
   * the tracker's clock, ms since the epoch
   */
  'at_ms'?: (number | string);
  'kernel_ns'?: (number | string);
}

/**
 * One timed canary run of a board (BoardHealthReport.kernel_ns), as the
 * tracker received it.
 */
export interface CanaryTiming__Output {
  /**
   * the tracker's clock, ms since the epoch
   */
  'at_ms': (number);
  'kernel_ns': (number);
}
