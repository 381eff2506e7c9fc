// Original file: protos/farm/v1/agent.proto

import type { BoardSpec as _farm_v1_BoardSpec, BoardSpec__Output as _farm_v1_BoardSpec__Output } from '../../farm/v1/BoardSpec';

export interface Register {
  'agent_name'?: (string);
  'boards'?: (_farm_v1_BoardSpec)[];
  'version'?: (string);
}

export interface Register__Output {
  'agent_name': (string);
  'boards': (_farm_v1_BoardSpec__Output)[];
  'version': (string);
}
