// Original file: protos/farm/v1/session.proto

/**
 * Who says a LaneHello. UNSPECIFIED (a hello without a role) and a value this
 * side does not know are refused as any malformed hello is (runtime/lane.ts).
 */
export const LaneRole = {
  LANE_ROLE_UNSPECIFIED: 'LANE_ROLE_UNSPECIFIED',
  /**
   * the session's host, on any lane
   */
  LANE_ROLE_HOST: 'LANE_ROLE_HOST',
  /**
   * the board's side of a relay lane, at the tracker's data port
   */
  LANE_ROLE_WORKER: 'LANE_ROLE_WORKER',
} as const;

/**
 * Who says a LaneHello. UNSPECIFIED (a hello without a role) and a value this
 * side does not know are refused as any malformed hello is (runtime/lane.ts).
 */
export type LaneRole =
  | 'LANE_ROLE_UNSPECIFIED'
  | 0
  /**
   * the session's host, on any lane
   */
  | 'LANE_ROLE_HOST'
  | 1
  /**
   * the board's side of a relay lane, at the tracker's data port
   */
  | 'LANE_ROLE_WORKER'
  | 2

/**
 * Who says a LaneHello. UNSPECIFIED (a hello without a role) and a value this
 * side does not know are refused as any malformed hello is (runtime/lane.ts).
 */
export type LaneRole__Output = typeof LaneRole[keyof typeof LaneRole]
