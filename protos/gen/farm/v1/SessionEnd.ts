// Original file: protos/farm/v1/session.proto

import type { Error as _farm_v1_Error, Error__Output as _farm_v1_Error__Output } from '../../farm/v1/Error';

/**
 * How a session ended. One message for every side that says it: the tracker to
 * the host (BoardFrame.end) and to the agent (TrackerMessage.end_session), the
 * agent to the tracker (AgentMessage.session_ended), the worker to the host.
 */
export interface SessionEnd {
  /**
   * empty on a host's own stream or lane
   */
  'session_id'?: (string);
  /**
   * absent: closed cleanly (the host asked)
   */
  'reason'?: (_farm_v1_Error | null);
}

/**
 * How a session ended. One message for every side that says it: the tracker to
 * the host (BoardFrame.end) and to the agent (TrackerMessage.end_session), the
 * agent to the tracker (AgentMessage.session_ended), the worker to the host.
 */
export interface SessionEnd__Output {
  /**
   * empty on a host's own stream or lane
   */
  'session_id': (string);
  /**
   * absent: closed cleanly (the host asked)
   */
  'reason': (_farm_v1_Error__Output | null);
}
