// Original file: protos/farm/v1/worker.proto


/**
 * The stored file of `sha256`, of `size` bytes, is wanted in the session's folder.
 */
export interface WorkerStoreTake {
  'id'?: (number);
  'sha256'?: (string);
  'size'?: (number | string);
}

/**
 * The stored file of `sha256`, of `size` bytes, is wanted in the session's folder.
 */
export interface WorkerStoreTake__Output {
  'id': (number);
  'sha256': (string);
  'size': (number);
}
