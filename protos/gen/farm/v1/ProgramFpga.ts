// Original file: protos/farm/v1/session.proto


/**
 * Load a bitstream into a VTA board's FPGA (TVM's program_fpga): both are
 * files uploaded to the session first. The agent loads it through the
 * kernel's FPGA manager after checking that the companion JSON (TVM's
 * vta_config.json) describes the agent's VTA configuration; the board's
 * `bitstream` label then holds the bitstream's SHA-256.
 */
export interface ProgramFpga {
  /**
   * session file name
   */
  'bitstream'?: (string);
  /**
   * session file name of the companion JSON
   */
  'config'?: (string);
}

/**
 * Load a bitstream into a VTA board's FPGA (TVM's program_fpga): both are
 * files uploaded to the session first. The agent loads it through the
 * kernel's FPGA manager after checking that the companion JSON (TVM's
 * vta_config.json) describes the agent's VTA configuration; the board's
 * `bitstream` label then holds the bitstream's SHA-256.
 */
export interface ProgramFpga__Output {
  /**
   * session file name
   */
  'bitstream': (string);
  /**
   * session file name of the companion JSON
   */
  'config': (string);
}
