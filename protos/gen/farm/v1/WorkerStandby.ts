// Original file: protos/farm/v1/worker.proto


/**
 * The worker's standby lane: a listening socket on fd 5 (worker/standby.ts).
 */
export interface WorkerStandby {
  /**
   * its name in the tickets the tracker signs for it (BoardReady.worker_id)
   */
  'worker_id'?: (string);
}

/**
 * The worker's standby lane: a listening socket on fd 5 (worker/standby.ts).
 */
export interface WorkerStandby__Output {
  /**
   * its name in the tickets the tracker signs for it (BoardReady.worker_id)
   */
  'worker_id': (string);
}
