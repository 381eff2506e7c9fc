// Original file: protos/farm/v1/agent.proto

import type { Registered as _farm_v1_Registered, Registered__Output as _farm_v1_Registered__Output } from '../../farm/v1/Registered';
import type { HeartbeatAck as _farm_v1_HeartbeatAck, HeartbeatAck__Output as _farm_v1_HeartbeatAck__Output } from '../../farm/v1/HeartbeatAck';
import type { AssignSession as _farm_v1_AssignSession, AssignSession__Output as _farm_v1_AssignSession__Output } from '../../farm/v1/AssignSession';
import type { SessionEnd as _farm_v1_SessionEnd, SessionEnd__Output as _farm_v1_SessionEnd__Output } from '../../farm/v1/SessionEnd';
import type { Drain as _farm_v1_Drain, Drain__Output as _farm_v1_Drain__Output } from '../../farm/v1/Drain';
import type { OpenRelay as _farm_v1_OpenRelay, OpenRelay__Output as _farm_v1_OpenRelay__Output } from '../../farm/v1/OpenRelay';
import type { Ping as _farm_v1_Ping, Ping__Output as _farm_v1_Ping__Output } from '../../farm/v1/Ping';

export interface TrackerMessage {
  'registered'?: (_farm_v1_Registered | null);
  'heartbeat_ack'?: (_farm_v1_HeartbeatAck | null);
  'assign'?: (_farm_v1_AssignSession | null);
  'end_session'?: (_farm_v1_SessionEnd | null);
  'drain'?: (_farm_v1_Drain | null);
  'open_relay'?: (_farm_v1_OpenRelay | null);
  'ping'?: (_farm_v1_Ping | null);
  'msg'?: "registered"|"heartbeat_ack"|"assign"|"end_session"|"drain"|"open_relay"|"ping";
}

export interface TrackerMessage__Output {
  'registered'?: (_farm_v1_Registered__Output | null);
  'heartbeat_ack'?: (_farm_v1_HeartbeatAck__Output | null);
  'assign'?: (_farm_v1_AssignSession__Output | null);
  'end_session'?: (_farm_v1_SessionEnd__Output | null);
  'drain'?: (_farm_v1_Drain__Output | null);
  'open_relay'?: (_farm_v1_OpenRelay__Output | null);
  'ping'?: (_farm_v1_Ping__Output | null);
  'msg'?: "registered"|"heartbeat_ack"|"assign"|"end_session"|"drain"|"open_relay"|"ping";
}
