// Original file: protos/farm/v1/agent.proto


export interface BoardSpec {
  /**
   * unique within the agent, e.g. "cpu0"
   */
  'name'?: (string);
  'key'?: (string);
  'kind'?: (string);
  'labels'?: ({[key: string]: string});
  'capabilities'?: ({[key: string]: string});
}

export interface BoardSpec__Output {
  /**
   * unique within the agent, e.g. "cpu0"
   */
  'name': (string);
  'key': (string);
  'kind': (string);
  'labels': ({[key: string]: string});
  'capabilities': ({[key: string]: string});
}
