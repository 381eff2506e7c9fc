// Original file: protos/farm/v1/worker.proto


/**
 * Warmed up (backend, tracker connection): sessions may come. A new worker
 * runs its board's canary first and sends its WorkerCanary before this.
 */
export interface WorkerReady {
}

/**
 * Warmed up (backend, tracker connection): sessions may come. A new worker
 * runs its board's canary first and sends its WorkerCanary before this.
 */
export interface WorkerReady__Output {
}
