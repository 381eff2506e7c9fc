// Original file: protos/farm/v1/session.proto

import type { Route as _farm_v1_Route, Route__Output as _farm_v1_Route__Output } from '../../farm/v1/Route';

/**
 * What a session's ticket says, signed by the tracker (Ed25519, its key in Registered.ticket_key). The ticket is
 * base64url(SessionTicket) "." base64url(signature): the host shows it whole and never reads it; a worker at its
 * standby lane checks it alone (runtime/session-tickets.ts), so the host's hello is all it needs.
 */
export interface SessionTicket {
  'session_id'?: (string);
  'agent_id'?: (string);
  'board_name'?: (string);
  /**
   * the worker it opens (BoardReady.worker_id); empty: only through the agent
   */
  'worker_id'?: (string);
  'route'?: (_farm_v1_Route);
  /**
   * by the tracker's clock: the lane must open before (the lease's open timeout)
   */
  'expires_ms'?: (number | string);
  /**
   * the lease's (0: none), from issued_ms
   */
  'session_timeout_ms'?: (number);
  'issued_ms'?: (number | string);
  /**
   * 16 random bytes: a ticket is a secret as well as a signature
   */
  'nonce'?: (Buffer | Uint8Array | string);
}

/**
 * What a session's ticket says, signed by the tracker (Ed25519, its key in Registered.ticket_key). The ticket is
 * base64url(SessionTicket) "." base64url(signature): the host shows it whole and never reads it; a worker at its
 * standby lane checks it alone (runtime/session-tickets.ts), so the host's hello is all it needs.
 */
export interface SessionTicket__Output {
  'session_id': (string);
  'agent_id': (string);
  'board_name': (string);
  /**
   * the worker it opens (BoardReady.worker_id); empty: only through the agent
   */
  'worker_id': (string);
  'route': (_farm_v1_Route__Output);
  /**
   * by the tracker's clock: the lane must open before (the lease's open timeout)
   */
  'expires_ms': (number);
  /**
   * the lease's (0: none), from issued_ms
   */
  'session_timeout_ms': (number);
  'issued_ms': (number);
  /**
   * 16 random bytes: a ticket is a secret as well as a signature
   */
  'nonce': (Buffer);
}
