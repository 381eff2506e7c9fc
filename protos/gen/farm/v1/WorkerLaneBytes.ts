// Original file: protos/farm/v1/worker.proto


/**
 * Bytes the serving session's lane carried so far, as this worker's end of it
 * counts them (its socket's bytesRead: `to_board`, host → board; bytesWritten:
 * `from_board`): totals since the lane came, at most once a second while they
 * change, and once before WorkerEnded. Believed only as its own session's, and
 * only within what a lane can carry (device-agent/agent/lane-bytes.ts): a
 * count that is not a whole number, decreases, or grows faster than any lane
 * could is a breach of the channel's protocol.
 */
export interface WorkerLaneBytes {
  'session_id'?: (string);
  'to_board'?: (number | string);
  'from_board'?: (number | string);
}

/**
 * Bytes the serving session's lane carried so far, as this worker's end of it
 * counts them (its socket's bytesRead: `to_board`, host → board; bytesWritten:
 * `from_board`): totals since the lane came, at most once a second while they
 * change, and once before WorkerEnded. Believed only as its own session's, and
 * only within what a lane can carry (device-agent/agent/lane-bytes.ts): a
 * count that is not a whole number, decreases, or grows faster than any lane
 * could is a breach of the channel's protocol.
 */
export interface WorkerLaneBytes__Output {
  'session_id': (string);
  'to_board': (number);
  'from_board': (number);
}
