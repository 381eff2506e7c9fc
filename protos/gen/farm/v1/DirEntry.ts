// Original file: protos/farm/v1/session.proto


export interface DirEntry {
  'name'?: (string);
  'size'?: (number | string);
}

export interface DirEntry__Output {
  'name': (string);
  'size': (number);
}
