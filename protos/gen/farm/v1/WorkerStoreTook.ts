// Original file: protos/farm/v1/worker.proto


/**
 * Answer to WorkerStoreTake: `file` is the name, in the session's folder, the
 * stored file was linked to; empty: not held.
 */
export interface WorkerStoreTook {
  'id'?: (number);
  'file'?: (string);
}

/**
 * Answer to WorkerStoreTake: `file` is the name, in the session's folder, the
 * stored file was linked to; empty: not held.
 */
export interface WorkerStoreTook__Output {
  'id': (number);
  'file': (string);
}
