// Original file: protos/farm/v1/worker.proto

import type { Error as _farm_v1_Error, Error__Output as _farm_v1_Error__Output } from '../../farm/v1/Error';

/**
 * Answer to WorkerFpgaRequest: what was loaded, or why not.
 */
export interface WorkerFpgaResult {
  'id'?: (number);
  'sha256'?: (string);
  'hardware'?: (string);
  'error'?: (_farm_v1_Error | null);
}

/**
 * Answer to WorkerFpgaRequest: what was loaded, or why not.
 */
export interface WorkerFpgaResult__Output {
  'id': (number);
  'sha256': (string);
  'hardware': (string);
  'error': (_farm_v1_Error__Output | null);
}
