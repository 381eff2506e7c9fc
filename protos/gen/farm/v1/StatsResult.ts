// Original file: protos/farm/v1/session.proto


export interface StatsResult {
  'counters'?: ({[key: string]: number | string});
  'info'?: ({[key: string]: string});
}

export interface StatsResult__Output {
  'counters': ({[key: string]: number});
  'info': ({[key: string]: string});
}
