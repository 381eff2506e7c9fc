// Original file: protos/farm/v1/worker.proto


/**
 * Answer to WorkerStoreKeep: the agent is done with it (kept or not).
 */
export interface WorkerStoreKept {
  'id'?: (number);
}

/**
 * Answer to WorkerStoreKeep: the agent is done with it (kept or not).
 */
export interface WorkerStoreKept__Output {
  'id': (number);
}
