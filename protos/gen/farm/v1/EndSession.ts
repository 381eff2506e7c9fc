// Original file: protos/farm/v1/agent.proto

import type { Error as _farm_v1_Error, Error__Output as _farm_v1_Error__Output } from '../../farm/v1/Error';

export interface EndSession {
  'session_id'?: (string);
  'reason'?: (_farm_v1_Error | null);
}

export interface EndSession__Output {
  'session_id': (string);
  'reason': (_farm_v1_Error__Output | null);
}
