// Original file: protos/farm/v1/agent.proto


export interface HeartbeatAck {
  'seq'?: (number);
}

export interface HeartbeatAck__Output {
  'seq': (number);
}
