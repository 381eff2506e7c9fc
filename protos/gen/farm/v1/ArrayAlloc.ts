// Original file: protos/farm/v1/session.proto


export interface ArrayAlloc {
  'shape'?: (number)[];
  /**
   * float32, int8, ... (protos/dtype.ts)
   */
  'dtype'?: (string);
}

export interface ArrayAlloc__Output {
  'shape': (number)[];
  /**
   * float32, int8, ... (protos/dtype.ts)
   */
  'dtype': (string);
}
