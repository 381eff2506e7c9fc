// Original file: protos/farm/v1/session.proto


export interface FpgaProgrammed {
  /**
   * of the bitstream, as the board's `bitstream` label now says
   */
  'sha256'?: (string);
  /**
   * the VTA configuration it implements, e.g. 1x16_i8w8a32_15_15_18_17
   */
  'hardware'?: (string);
}

export interface FpgaProgrammed__Output {
  /**
   * of the bitstream, as the board's `bitstream` label now says
   */
  'sha256': (string);
  /**
   * the VTA configuration it implements, e.g. 1x16_i8w8a32_15_15_18_17
   */
  'hardware': (string);
}
