// Original file: protos/farm/v1/worker.proto


/**
 * Answer to WorkerOutputRead: `data`, what the serving session's worker
 * printed from byte `start` on (counted from the session's first byte; later
 * than asked where the agent kept no more), and `end`, all it printed so far.
 */
export interface WorkerOutput {
  'id'?: (number);
  'data'?: (Buffer | Uint8Array | string);
  'start'?: (number | string);
  'end'?: (number | string);
}

/**
 * Answer to WorkerOutputRead: `data`, what the serving session's worker
 * printed from byte `start` on (counted from the session's first byte; later
 * than asked where the agent kept no more), and `end`, all it printed so far.
 */
export interface WorkerOutput__Output {
  'id': (number);
  'data': (Buffer);
  'start': (number);
  'end': (number);
}
