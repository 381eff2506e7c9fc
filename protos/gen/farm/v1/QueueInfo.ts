// Original file: protos/farm/v1/host.proto


export interface QueueInfo {
  'key'?: (string);
  'total'?: (number);
  'free'?: (number);
  'pending'?: (number);
}

export interface QueueInfo__Output {
  'key': (string);
  'total': (number);
  'free': (number);
  'pending': (number);
}
