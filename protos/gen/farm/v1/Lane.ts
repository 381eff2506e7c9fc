// Original file: protos/farm/v1/common.proto

export const Lane = {
  /**
   * no lane open (yet)
   */
  LANE_NONE: 'LANE_NONE',
  LANE_DIRECT: 'LANE_DIRECT',
  LANE_RELAY: 'LANE_RELAY',
  LANE_GRPC: 'LANE_GRPC',
  /**
   * a TVM server's board: the TVM client's own connection to it (tracker/tvm)
   */
  LANE_TVM: 'LANE_TVM',
} as const;

export type Lane =
  /**
   * no lane open (yet)
   */
  | 'LANE_NONE'
  | 0
  | 'LANE_DIRECT'
  | 1
  | 'LANE_RELAY'
  | 2
  | 'LANE_GRPC'
  | 3
  /**
   * a TVM server's board: the TVM client's own connection to it (tracker/tvm)
   */
  | 'LANE_TVM'
  | 4

export type Lane__Output = typeof Lane[keyof typeof Lane]
