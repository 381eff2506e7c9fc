// Original file: protos/farm/v1/agent.proto


/**
 * The host of an auto-routed session could not reach the agent directly and
 * waits on the tracker's data port: dial it for the session's worker.
 */
export interface OpenRelay {
  'session_id'?: (string);
}

/**
 * The host of an auto-routed session could not reach the agent directly and
 * waits on the tracker's data port: dial it for the session's worker.
 */
export interface OpenRelay__Output {
  'session_id': (string);
}
