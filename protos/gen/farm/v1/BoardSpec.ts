// Original file: protos/farm/v1/agent.proto

import type { CudaLaunchLimits as _farm_v1_CudaLaunchLimits, CudaLaunchLimits__Output as _farm_v1_CudaLaunchLimits__Output } from '../../farm/v1/CudaLaunchLimits';
import type { BoardKind as _farm_v1_BoardKind, BoardKind__Output as _farm_v1_BoardKind__Output } from '../../farm/v1/BoardKind';

export interface BoardSpec {
  /**
   * unique within the agent, e.g. "cpu0"
   */
  'name'?: (string);
  'key'?: (string);
  'labels'?: ({[key: string]: string});
  'capabilities'?: ({[key: string]: string});
  /**
   * a CUDA board's launch limits (BoardInfo.cuda_limits)
   */
  'cuda_limits'?: (_farm_v1_CudaLaunchLimits | null);
  /**
   * one of contract.json's boardKinds: the tracker refuses any other (tvm-rpc included)
   */
  'kind'?: (_farm_v1_BoardKind);
}

export interface BoardSpec__Output {
  /**
   * unique within the agent, e.g. "cpu0"
   */
  'name': (string);
  'key': (string);
  'labels': ({[key: string]: string});
  'capabilities': ({[key: string]: string});
  /**
   * a CUDA board's launch limits (BoardInfo.cuda_limits)
   */
  'cuda_limits': (_farm_v1_CudaLaunchLimits__Output | null);
  /**
   * one of contract.json's boardKinds: the tracker refuses any other (tvm-rpc included)
   */
  'kind': (_farm_v1_BoardKind__Output);
}
