// Original file: protos/farm/v1/host.proto


export interface AgentInfo {
  'id'?: (string);
  'name'?: (string);
  'peer'?: (string);
  'attached_at_ms'?: (number | string);
  'boards'?: (number);
}

export interface AgentInfo__Output {
  'id': (string);
  'name': (string);
  'peer': (string);
  'attached_at_ms': (number);
  'boards': (number);
}
