// Original file: protos/farm/v1/agent.proto

import type { BoardSpec as _farm_v1_BoardSpec, BoardSpec__Output as _farm_v1_BoardSpec__Output } from '../../farm/v1/BoardSpec';

export interface Register {
  'agent_name'?: (string);
  'boards'?: (_farm_v1_BoardSpec)[];
  'version'?: (string);
  /**
   * the agent's direct-lane port (0: no direct lane)
   */
  'data_port'?: (number);
  /**
   * where hosts reach it; empty: the address the tracker sees the agent at
   */
  'data_host'?: (string);
  /**
   * the direct lane speaks TLS
   */
  'data_tls'?: (boolean);
  /**
   * random, one per agent process: its re-dials carry it, a restarted or second agent has another
   */
  'instance'?: (string);
}

export interface Register__Output {
  'agent_name': (string);
  'boards': (_farm_v1_BoardSpec__Output)[];
  'version': (string);
  /**
   * the agent's direct-lane port (0: no direct lane)
   */
  'data_port': (number);
  /**
   * where hosts reach it; empty: the address the tracker sees the agent at
   */
  'data_host': (string);
  /**
   * the direct lane speaks TLS
   */
  'data_tls': (boolean);
  /**
   * random, one per agent process: its re-dials carry it, a restarted or second agent has another
   */
  'instance': (string);
}
