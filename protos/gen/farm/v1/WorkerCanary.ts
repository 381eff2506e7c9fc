// Original file: protos/farm/v1/worker.proto


/**
 * The board's canary (device-agent/agent/canary.ts). `ran` false: the board has
 * none. `kernel_ns`: its kernel's time per run, when it passed and was timed.
 */
export interface WorkerCanary {
  'ran'?: (boolean);
  'ok'?: (boolean);
  'detail'?: (string);
  'duration_ms'?: (number | string);
  'kernel_ns'?: (number | string);
}

/**
 * The board's canary (device-agent/agent/canary.ts). `ran` false: the board has
 * none. `kernel_ns`: its kernel's time per run, when it passed and was timed.
 */
export interface WorkerCanary__Output {
  'ran': (boolean);
  'ok': (boolean);
  'detail': (string);
  'duration_ms': (number);
  'kernel_ns': (number);
}
