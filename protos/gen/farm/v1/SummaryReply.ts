// Original file: protos/farm/v1/host.proto

import type { QueueInfo as _farm_v1_QueueInfo, QueueInfo__Output as _farm_v1_QueueInfo__Output } from '../../farm/v1/QueueInfo';
import type { BoardInfo as _farm_v1_BoardInfo, BoardInfo__Output as _farm_v1_BoardInfo__Output } from '../../farm/v1/BoardInfo';
import type { AgentInfo as _farm_v1_AgentInfo, AgentInfo__Output as _farm_v1_AgentInfo__Output } from '../../farm/v1/AgentInfo';

export interface SummaryReply {
  'queues'?: (_farm_v1_QueueInfo)[];
  'boards'?: (_farm_v1_BoardInfo)[];
  'agents'?: (_farm_v1_AgentInfo)[];
  'tracker_version'?: (string);
  'uptime_ms'?: (number | string);
}

export interface SummaryReply__Output {
  'queues': (_farm_v1_QueueInfo__Output)[];
  'boards': (_farm_v1_BoardInfo__Output)[];
  'agents': (_farm_v1_AgentInfo__Output)[];
  'tracker_version': (string);
  'uptime_ms': (number);
}
