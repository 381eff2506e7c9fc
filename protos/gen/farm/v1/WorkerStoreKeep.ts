// Original file: protos/farm/v1/worker.proto


/**
 * The serving session's file `name` (a plain name in its folder) is to be kept
 * in the agent's content store under `sha256` (checked before it is ever handed out).
 */
export interface WorkerStoreKeep {
  'id'?: (number);
  'name'?: (string);
  'sha256'?: (string);
}

/**
 * The serving session's file `name` (a plain name in its folder) is to be kept
 * in the agent's content store under `sha256` (checked before it is ever handed out).
 */
export interface WorkerStoreKeep__Output {
  'id': (number);
  'name': (string);
  'sha256': (string);
}
