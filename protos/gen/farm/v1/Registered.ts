// Original file: protos/farm/v1/agent.proto


export interface Registered {
  'agent_id'?: (string);
  'heartbeat_interval_ms'?: (number);
  'max_missed_heartbeats'?: (number);
}

export interface Registered__Output {
  'agent_id': (string);
  'heartbeat_interval_ms': (number);
  'max_missed_heartbeats': (number);
}
