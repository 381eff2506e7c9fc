// Original file: protos/farm/v1/common.proto

/**
 * What a board is: the backend an agent serves it with, or a stock TVM
 * server. The kinds agents serve are declared in contract.json (boardKinds);
 * protos/enums.ts refuses to load when this enum and it disagree. Users see
 * the lowercase names ("cpu", "vta-sim", "tvm-rpc"): protos/enums.ts and
 * python/kernelfarm/enums.py convert them.
 */
export const BoardKind = {
  BOARD_KIND_UNSPECIFIED: 'BOARD_KIND_UNSPECIFIED',
  BOARD_KIND_CPU: 'BOARD_KIND_CPU',
  BOARD_KIND_CUDA: 'BOARD_KIND_CUDA',
  BOARD_KIND_VTA_SIM: 'BOARD_KIND_VTA_SIM',
  BOARD_KIND_VTA: 'BOARD_KIND_VTA',
  /**
   * a stock TVM RPC server on the tracker's TVM port: only the tracker makes these boards (tracker/tvm)
   */
  BOARD_KIND_TVM_RPC: 'BOARD_KIND_TVM_RPC',
  /**
   * Apache TVM's runtime behind a kernelfarm agent, granted to TVM clients on the TVM port (docs/tvm-boards.md)
   */
  BOARD_KIND_TVM: 'BOARD_KIND_TVM',
} as const;

/**
 * What a board is: the backend an agent serves it with, or a stock TVM
 * server. The kinds agents serve are declared in contract.json (boardKinds);
 * protos/enums.ts refuses to load when this enum and it disagree. Users see
 * the lowercase names ("cpu", "vta-sim", "tvm-rpc"): protos/enums.ts and
 * python/kernelfarm/enums.py convert them.
 */
export type BoardKind =
  | 'BOARD_KIND_UNSPECIFIED'
  | 0
  | 'BOARD_KIND_CPU'
  | 1
  | 'BOARD_KIND_CUDA'
  | 2
  | 'BOARD_KIND_VTA_SIM'
  | 3
  | 'BOARD_KIND_VTA'
  | 4
  /**
   * a stock TVM RPC server on the tracker's TVM port: only the tracker makes these boards (tracker/tvm)
   */
  | 'BOARD_KIND_TVM_RPC'
  | 5
  /**
   * Apache TVM's runtime behind a kernelfarm agent, granted to TVM clients on the TVM port (docs/tvm-boards.md)
   */
  | 'BOARD_KIND_TVM'
  | 6

/**
 * What a board is: the backend an agent serves it with, or a stock TVM
 * server. The kinds agents serve are declared in contract.json (boardKinds);
 * protos/enums.ts refuses to load when this enum and it disagree. Users see
 * the lowercase names ("cpu", "vta-sim", "tvm-rpc"): protos/enums.ts and
 * python/kernelfarm/enums.py convert them.
 */
export type BoardKind__Output = typeof BoardKind[keyof typeof BoardKind]
