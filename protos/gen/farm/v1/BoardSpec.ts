// Original file: protos/farm/v1/agent.proto

import type { CudaLaunchLimits as _farm_v1_CudaLaunchLimits, CudaLaunchLimits__Output as _farm_v1_CudaLaunchLimits__Output } from '../../farm/v1/CudaLaunchLimits';

export interface BoardSpec {
  /**
   * unique within the agent, e.g. "cpu0"
   */
  'name'?: (string);
  'key'?: (string);
  'kind'?: (string);
  'labels'?: ({[key: string]: string});
  'capabilities'?: ({[key: string]: string});
  /**
   * a CUDA board's launch limits (BoardInfo.cuda_limits)
   */
  'cuda_limits'?: (_farm_v1_CudaLaunchLimits | null);
}

export interface BoardSpec__Output {
  /**
   * unique within the agent, e.g. "cpu0"
   */
  'name': (string);
  'key': (string);
  'kind': (string);
  'labels': ({[key: string]: string});
  'capabilities': ({[key: string]: string});
  /**
   * a CUDA board's launch limits (BoardInfo.cuda_limits)
   */
  'cuda_limits': (_farm_v1_CudaLaunchLimits__Output | null);
}
