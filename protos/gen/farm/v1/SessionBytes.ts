// Original file: protos/farm/v1/agent.proto


/**
 * A direct-lane session's bytes so far, as its worker reported them (the
 * tracker counts the other lanes' itself): totals since its lane opened,
 * host → board (`to_board`) and board → host (`from_board`), whole numbers
 * that never decrease; at most about once a second while they change, and
 * once before the session's SessionEnd. The agent checked them
 * (device-agent/agent/lane-bytes.ts); the tracker applies them only to a
 * direct-lane session on one of this agent's boards (tracker/lane-bytes.ts).
 */
export interface SessionBytes {
  'session_id'?: (string);
  'to_board'?: (number | string);
  'from_board'?: (number | string);
}

/**
 * A direct-lane session's bytes so far, as its worker reported them (the
 * tracker counts the other lanes' itself): totals since its lane opened,
 * host → board (`to_board`) and board → host (`from_board`), whole numbers
 * that never decrease; at most about once a second while they change, and
 * once before the session's SessionEnd. The agent checked them
 * (device-agent/agent/lane-bytes.ts); the tracker applies them only to a
 * direct-lane session on one of this agent's boards (tracker/lane-bytes.ts).
 */
export interface SessionBytes__Output {
  'session_id': (string);
  'to_board': (number);
  'from_board': (number);
}
