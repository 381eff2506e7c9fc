// Original file: protos/farm/v1/agent.proto


/**
 * A board's labels changed while attached (a VTA board was programmed with a
 * bitstream: label `bitstream`). They replace the labels the board
 * registered with; later registrations carry them.
 */
export interface BoardLabels {
  'board_name'?: (string);
  'labels'?: ({[key: string]: string});
}

/**
 * A board's labels changed while attached (a VTA board was programmed with a
 * bitstream: label `bitstream`). They replace the labels the board
 * registered with; later registrations carry them.
 */
export interface BoardLabels__Output {
  'board_name': (string);
  'labels': ({[key: string]: string});
}
