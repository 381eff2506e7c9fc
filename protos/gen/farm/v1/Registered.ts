// Original file: protos/farm/v1/agent.proto


export interface Registered {
  'agent_id'?: (string);
  'heartbeat_interval_ms'?: (number);
  'max_missed_heartbeats'?: (number);
  /**
   * the session end grace (protos/routes.ts): how long a worker may take to report its end
   */
  'end_grace_ms'?: (number);
  /**
   * the tracker's data port (relay lanes); its host is the tracker's
   */
  'relay_port'?: (number);
  /**
   * the tracker's Ed25519 public key (32 bytes): it signs every session's ticket (SessionTicket), which a worker checks alone at its standby lane
   */
  'ticket_key'?: (Buffer | Uint8Array | string);
  /**
   * the tracker's clock (ms since the epoch) as it sent this: a ticket's expiry is by that clock
   */
  'now_ms'?: (number | string);
}

export interface Registered__Output {
  'agent_id': (string);
  'heartbeat_interval_ms': (number);
  'max_missed_heartbeats': (number);
  /**
   * the session end grace (protos/routes.ts): how long a worker may take to report its end
   */
  'end_grace_ms': (number);
  /**
   * the tracker's data port (relay lanes); its host is the tracker's
   */
  'relay_port': (number);
  /**
   * the tracker's Ed25519 public key (32 bytes): it signs every session's ticket (SessionTicket), which a worker checks alone at its standby lane
   */
  'ticket_key': (Buffer);
  /**
   * the tracker's clock (ms since the epoch) as it sent this: a ticket's expiry is by that clock
   */
  'now_ms': (number);
}
