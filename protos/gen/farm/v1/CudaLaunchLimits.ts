// Original file: protos/farm/v1/common.proto


/**
 * What a CUDA board's GPU allows one kernel launch, as its driver reports it:
 * a host refuses a launch past them before sending it (domain/cuda-limits.ts).
 */
export interface CudaLaunchLimits {
  'max_threads_per_block'?: (number);
  /**
   * x, y, z
   */
  'max_block'?: (number)[];
  /**
   * x, y, z
   */
  'max_grid'?: (number)[];
  /**
   * bytes, without opting in
   */
  'max_shared_per_block'?: (number);
  /**
   * bytes, with cuFuncSetAttribute's opt-in
   */
  'max_shared_per_block_optin'?: (number);
  'max_registers_per_block'?: (number);
  'warp_size'?: (number);
}

/**
 * What a CUDA board's GPU allows one kernel launch, as its driver reports it:
 * a host refuses a launch past them before sending it (domain/cuda-limits.ts).
 */
export interface CudaLaunchLimits__Output {
  'max_threads_per_block': (number);
  /**
   * x, y, z
   */
  'max_block': (number)[];
  /**
   * x, y, z
   */
  'max_grid': (number)[];
  /**
   * bytes, without opting in
   */
  'max_shared_per_block': (number);
  /**
   * bytes, with cuFuncSetAttribute's opt-in
   */
  'max_shared_per_block_optin': (number);
  'max_registers_per_block': (number);
  'warp_size': (number);
}
