// Original file: protos/farm/v1/worker.proto


/**
 * The next session's folder, made (its tmpfs mounted) while the worker is idle: the session that comes takes it.
 */
export interface WorkerPrepared {
  'dir'?: (string);
}

/**
 * The next session's folder, made (its tmpfs mounted) while the worker is idle: the session that comes takes it.
 */
export interface WorkerPrepared__Output {
  'dir': (string);
}
