// Original file: protos/farm/v1/bundle.proto


/**
 * One entry of a string map, in a list sorted by the UTF-8 bytes of `key`.
 */
export interface BundleEntry {
  'key'?: (string);
  'value'?: (string);
}

/**
 * One entry of a string map, in a list sorted by the UTF-8 bytes of `key`.
 */
export interface BundleEntry__Output {
  'key': (string);
  'value': (string);
}
