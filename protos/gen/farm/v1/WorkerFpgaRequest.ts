// Original file: protos/farm/v1/worker.proto


/**
 * The session asks to load a bitstream (session.proto ProgramFpga): both are
 * plain names of files in the session's folder.
 */
export interface WorkerFpgaRequest {
  'id'?: (number);
  'bitstream'?: (string);
  'config'?: (string);
}

/**
 * The session asks to load a bitstream (session.proto ProgramFpga): both are
 * plain names of files in the session's folder.
 */
export interface WorkerFpgaRequest__Output {
  'id': (number);
  'bitstream': (string);
  'config': (string);
}
