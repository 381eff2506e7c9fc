// Original file: protos/farm/v1/agent.proto


export interface Registered {
  'agent_id'?: (string);
  'heartbeat_interval_ms'?: (number);
  'max_missed_heartbeats'?: (number);
  /**
   * the session end grace (protos/routes.ts): how long a worker may take to report its end
   */
  'end_grace_ms'?: (number);
  /**
   * the tracker's data port (relay lanes); its host is the tracker's
   */
  'relay_port'?: (number);
}

export interface Registered__Output {
  'agent_id': (string);
  'heartbeat_interval_ms': (number);
  'max_missed_heartbeats': (number);
  /**
   * the session end grace (protos/routes.ts): how long a worker may take to report its end
   */
  'end_grace_ms': (number);
  /**
   * the tracker's data port (relay lanes); its host is the tracker's
   */
  'relay_port': (number);
}
