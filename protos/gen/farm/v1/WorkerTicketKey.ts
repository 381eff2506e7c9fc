// Original file: protos/farm/v1/worker.proto


/**
 * The tracker's ticket key (Registered.ticket_key), sent to a worker with its standby lane and again whenever the
 * agent registers anew: with it the worker admits a session's host by the ticket alone, before its assignment.
 */
export interface WorkerTicketKey {
  'public_key'?: (Buffer | Uint8Array | string);
  /**
   * the tracker's clock less the agent's, as the agent saw it at registration
   */
  'tracker_clock_offset_ms'?: (number | string);
  /**
   * the session end grace: a session's calls end this long before its lease (WorkerAssign.calls_end_in_ms)
   */
  'end_grace_ms'?: (number);
}

/**
 * The tracker's ticket key (Registered.ticket_key), sent to a worker with its standby lane and again whenever the
 * agent registers anew: with it the worker admits a session's host by the ticket alone, before its assignment.
 */
export interface WorkerTicketKey__Output {
  'public_key': (Buffer);
  /**
   * the tracker's clock less the agent's, as the agent saw it at registration
   */
  'tracker_clock_offset_ms': (number);
  /**
   * the session end grace: a session's calls end this long before its lease (WorkerAssign.calls_end_in_ms)
   */
  'end_grace_ms': (number);
}
