// Original file: protos/farm/v1/worker.proto


/**
 * The worker's standby lane: a listening socket on fd 5 (worker/standby.ts).
 */
export interface WorkerStandby {
}

/**
 * The worker's standby lane: a listening socket on fd 5 (worker/standby.ts).
 */
export interface WorkerStandby__Output {
}
