// Original file: protos/farm/v1/session.proto

import type { DirEntry as _farm_v1_DirEntry, DirEntry__Output as _farm_v1_DirEntry__Output } from '../../farm/v1/DirEntry';

export interface DirListing {
  'entries'?: (_farm_v1_DirEntry)[];
}

export interface DirListing__Output {
  'entries': (_farm_v1_DirEntry__Output)[];
}
