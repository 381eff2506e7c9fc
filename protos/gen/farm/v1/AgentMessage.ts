// Original file: protos/farm/v1/agent.proto

import type { Register as _farm_v1_Register, Register__Output as _farm_v1_Register__Output } from '../../farm/v1/Register';
import type { Heartbeat as _farm_v1_Heartbeat, Heartbeat__Output as _farm_v1_Heartbeat__Output } from '../../farm/v1/Heartbeat';
import type { BoardReady as _farm_v1_BoardReady, BoardReady__Output as _farm_v1_BoardReady__Output } from '../../farm/v1/BoardReady';
import type { SessionEnd as _farm_v1_SessionEnd, SessionEnd__Output as _farm_v1_SessionEnd__Output } from '../../farm/v1/SessionEnd';
import type { BoardHealthReport as _farm_v1_BoardHealthReport, BoardHealthReport__Output as _farm_v1_BoardHealthReport__Output } from '../../farm/v1/BoardHealthReport';
import type { LaneOpened as _farm_v1_LaneOpened, LaneOpened__Output as _farm_v1_LaneOpened__Output } from '../../farm/v1/LaneOpened';
import type { BoardLabels as _farm_v1_BoardLabels, BoardLabels__Output as _farm_v1_BoardLabels__Output } from '../../farm/v1/BoardLabels';
import type { SessionBytes as _farm_v1_SessionBytes, SessionBytes__Output as _farm_v1_SessionBytes__Output } from '../../farm/v1/SessionBytes';

export interface AgentMessage {
  'register'?: (_farm_v1_Register | null);
  'heartbeat'?: (_farm_v1_Heartbeat | null);
  'board_ready'?: (_farm_v1_BoardReady | null);
  'session_ended'?: (_farm_v1_SessionEnd | null);
  'board_health'?: (_farm_v1_BoardHealthReport | null);
  'lane_opened'?: (_farm_v1_LaneOpened | null);
  'board_labels'?: (_farm_v1_BoardLabels | null);
  'session_bytes'?: (_farm_v1_SessionBytes | null);
  'msg'?: "register"|"heartbeat"|"board_ready"|"session_ended"|"board_health"|"lane_opened"|"board_labels"|"session_bytes";
}

export interface AgentMessage__Output {
  'register'?: (_farm_v1_Register__Output | null);
  'heartbeat'?: (_farm_v1_Heartbeat__Output | null);
  'board_ready'?: (_farm_v1_BoardReady__Output | null);
  'session_ended'?: (_farm_v1_SessionEnd__Output | null);
  'board_health'?: (_farm_v1_BoardHealthReport__Output | null);
  'lane_opened'?: (_farm_v1_LaneOpened__Output | null);
  'board_labels'?: (_farm_v1_BoardLabels__Output | null);
  'session_bytes'?: (_farm_v1_SessionBytes__Output | null);
  'msg'?: "register"|"heartbeat"|"board_ready"|"session_ended"|"board_health"|"lane_opened"|"board_labels"|"session_bytes";
}
