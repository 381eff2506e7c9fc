// Original file: protos/farm/v1/session.proto


export interface ParamInfo {
  'name'?: (string);
  /**
   * buffer | scalar
   */
  'kind'?: (string);
  'dtype'?: (string);
  /**
   * empty: any shape
   */
  'shape'?: (number)[];
}

export interface ParamInfo__Output {
  'name': (string);
  /**
   * buffer | scalar
   */
  'kind': (string);
  'dtype': (string);
  /**
   * empty: any shape
   */
  'shape': (number)[];
}
