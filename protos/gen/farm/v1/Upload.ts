// Original file: protos/farm/v1/session.proto


export interface Upload {
  'name'?: (string);
  /**
   * announced size, checked against the caps up front
   */
  'total_bytes'?: (number | string);
  'data'?: (Buffer | Uint8Array | string);
  'done'?: (boolean);
  /**
   * first or last frame, optional: the whole file's digest; the board keeps the
   */
  'sha256'?: (string);
  /**
   * bytes under it for later sessions (checked before it hands them out)
   */
  'probe'?: (boolean);
  /**
   * they are now the file `name`; NOT_FOUND: send them
   */
  'tree_sha256'?: (string);
}

export interface Upload__Output {
  'name': (string);
  /**
   * announced size, checked against the caps up front
   */
  'total_bytes': (number);
  'data': (Buffer);
  'done': (boolean);
  /**
   * first or last frame, optional: the whole file's digest; the board keeps the
   */
  'sha256': (string);
  /**
   * bytes under it for later sessions (checked before it hands them out)
   */
  'probe': (boolean);
  /**
   * they are now the file `name`; NOT_FOUND: send them
   */
  'tree_sha256': (string);
}
