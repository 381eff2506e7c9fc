// Original file: protos/farm/v1/session.proto

import type { BoardInfo as _farm_v1_BoardInfo, BoardInfo__Output as _farm_v1_BoardInfo__Output } from '../../farm/v1/BoardInfo';
import type { Route as _farm_v1_Route, Route__Output as _farm_v1_Route__Output } from '../../farm/v1/Route';

/**
 * The session was granted: which board, and how to reach its worker.
 */
export interface Grant {
  'session_id'?: (string);
  'board'?: (_farm_v1_BoardInfo | null);
  'queued_ms'?: (number | string);
  /**
   * one-time, bound to the session: opens its lane (and releases it)
   */
  'ticket'?: (string);
  /**
   * HOST:PORT of the board's agent (direct, auto)
   */
  'direct_address'?: (string);
  /**
   * the tracker's data port (relay, auto); its host is the tracker's
   */
  'relay_port'?: (number);
  /**
   * the lease ends after this long
   */
  'session_timeout_ms'?: (number);
  /**
   * the direct lane speaks TLS (the farm's CA)
   */
  'lane_tls'?: (boolean);
  /**
   * after the lane closes without an end, how long the tracker may take to say why
   */
  'end_grace_ms'?: (number);
  /**
   * HOST:PORT of the standby lane of the worker that takes the session (direct, auto): tried before direct_address
   */
  'worker_address'?: (string);
  /**
   * direct, relay or grpc; auto: direct, with relay as its fallback
   */
  'route'?: (_farm_v1_Route);
}

/**
 * The session was granted: which board, and how to reach its worker.
 */
export interface Grant__Output {
  'session_id': (string);
  'board': (_farm_v1_BoardInfo__Output | null);
  'queued_ms': (number);
  /**
   * one-time, bound to the session: opens its lane (and releases it)
   */
  'ticket': (string);
  /**
   * HOST:PORT of the board's agent (direct, auto)
   */
  'direct_address': (string);
  /**
   * the tracker's data port (relay, auto); its host is the tracker's
   */
  'relay_port': (number);
  /**
   * the lease ends after this long
   */
  'session_timeout_ms': (number);
  /**
   * the direct lane speaks TLS (the farm's CA)
   */
  'lane_tls': (boolean);
  /**
   * after the lane closes without an end, how long the tracker may take to say why
   */
  'end_grace_ms': (number);
  /**
   * HOST:PORT of the standby lane of the worker that takes the session (direct, auto): tried before direct_address
   */
  'worker_address': (string);
  /**
   * direct, relay or grpc; auto: direct, with relay as its fallback
   */
  'route': (_farm_v1_Route__Output);
}
