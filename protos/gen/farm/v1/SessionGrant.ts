// Original file: protos/farm/v1/host.proto

import type { BoardInfo as _farm_v1_BoardInfo, BoardInfo__Output as _farm_v1_BoardInfo__Output } from '../../farm/v1/BoardInfo';

export interface SessionGrant {
  'session_id'?: (string);
  'token'?: (string);
  'board'?: (_farm_v1_BoardInfo | null);
  'queued_ms'?: (number | string);
}

export interface SessionGrant__Output {
  'session_id': (string);
  'token': (string);
  'board': (_farm_v1_BoardInfo__Output | null);
  'queued_ms': (number);
}
