// Original file: protos/farm/v1/session.proto

import type { Call as _farm_v1_Call, Call__Output as _farm_v1_Call__Output } from '../../farm/v1/Call';

/**
 * TVM's time_evaluator: see host-sdk/time-evaluator.ts for the semantics.
 */
export interface TimeEvaluate {
  'call'?: (_farm_v1_Call | null);
  'number'?: (number);
  'repeat'?: (number);
  'min_repeat_ms'?: (number | string);
  'cooldown_ms'?: (number | string);
  'repeats_to_cooldown'?: (number);
  'limit_zero_time_iterations'?: (number);
  /**
   * CUDA: overwrite the L2 cache before every repeat
   */
  'flush_l2'?: (boolean);
  /**
   * CUDA: replay the `number` launches as one captured CUDA graph
   */
  'graph'?: (boolean);
  /**
   * CPU: evict every buffer argument but the first from the caches before every repeat
   */
  'flush_cpu_cache'?: (boolean);
  /**
   * > 0: after `repeat` repeats, more until the median's relative standard error is at most this (domain/precision.ts)
   */
  'target_rse'?: (number | string);
  /**
   * with target_rse: stop adding repeats after this long (0: DEFAULT_PRECISION_BUDGET_MS)
   */
  'budget_ms'?: (number | string);
}

/**
 * TVM's time_evaluator: see host-sdk/time-evaluator.ts for the semantics.
 */
export interface TimeEvaluate__Output {
  'call': (_farm_v1_Call__Output | null);
  'number': (number);
  'repeat': (number);
  'min_repeat_ms': (number);
  'cooldown_ms': (number);
  'repeats_to_cooldown': (number);
  'limit_zero_time_iterations': (number);
  /**
   * CUDA: overwrite the L2 cache before every repeat
   */
  'flush_l2': (boolean);
  /**
   * CUDA: replay the `number` launches as one captured CUDA graph
   */
  'graph': (boolean);
  /**
   * CPU: evict every buffer argument but the first from the caches before every repeat
   */
  'flush_cpu_cache': (boolean);
  /**
   * > 0: after `repeat` repeats, more until the median's relative standard error is at most this (domain/precision.ts)
   */
  'target_rse': (number);
  /**
   * with target_rse: stop adding repeats after this long (0: DEFAULT_PRECISION_BUDGET_MS)
   */
  'budget_ms': (number);
}
