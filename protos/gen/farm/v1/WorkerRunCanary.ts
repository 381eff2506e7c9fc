// Original file: protos/farm/v1/worker.proto


/**
 * Run the board's canary now and answer WorkerCanary (asked only of an idle
 * worker that never loaded a tenant's code).
 */
export interface WorkerRunCanary {
}

/**
 * Run the board's canary now and answer WorkerCanary (asked only of an idle
 * worker that never loaded a tenant's code).
 */
export interface WorkerRunCanary__Output {
}
