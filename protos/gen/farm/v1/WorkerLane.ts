// Original file: protos/farm/v1/worker.proto

import type { Lane as _farm_v1_Lane, Lane__Output as _farm_v1_Lane__Output } from '../../farm/v1/Lane';

/**
 * The session's lane: a socket on fd 5. `kind` LANE_DIRECT: the host's hello
 * was checked, the worker welcomes it; LANE_RELAY: the tracker's welcome is the
 * first frame; LANE_GRPC: one end of a socket pair whose other end the agent
 * joins to the session's ServeSession stream (device-agent/agent/lane-pair.ts);
 * LANE_TVM: a TVM client's socket on a tvm board, `rest` its TVM handshake as
 * the agent read it (the worker answers it and runs TVM's server loop:
 * docs/tvm-boards.md). LANE_NONE is never a worker's lane: the worker refuses it.
 * `rest`: bytes already read from the socket.
 */
export interface WorkerLane {
  'session_id'?: (string);
  'rest'?: (Buffer | Uint8Array | string);
  'kind'?: (_farm_v1_Lane);
}

/**
 * The session's lane: a socket on fd 5. `kind` LANE_DIRECT: the host's hello
 * was checked, the worker welcomes it; LANE_RELAY: the tracker's welcome is the
 * first frame; LANE_GRPC: one end of a socket pair whose other end the agent
 * joins to the session's ServeSession stream (device-agent/agent/lane-pair.ts);
 * LANE_TVM: a TVM client's socket on a tvm board, `rest` its TVM handshake as
 * the agent read it (the worker answers it and runs TVM's server loop:
 * docs/tvm-boards.md). LANE_NONE is never a worker's lane: the worker refuses it.
 * `rest`: bytes already read from the socket.
 */
export interface WorkerLane__Output {
  'session_id': (string);
  'rest': (Buffer);
  'kind': (_farm_v1_Lane__Output);
}
