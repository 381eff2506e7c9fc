// Original file: protos/farm/v1/agent.proto


export interface Heartbeat {
  'seq'?: (number);
}

export interface Heartbeat__Output {
  'seq': (number);
}
