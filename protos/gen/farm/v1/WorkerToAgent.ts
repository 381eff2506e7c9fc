// Original file: protos/farm/v1/worker.proto

import type { WorkerReady as _farm_v1_WorkerReady, WorkerReady__Output as _farm_v1_WorkerReady__Output } from '../../farm/v1/WorkerReady';
import type { WorkerLaneOpened as _farm_v1_WorkerLaneOpened, WorkerLaneOpened__Output as _farm_v1_WorkerLaneOpened__Output } from '../../farm/v1/WorkerLaneOpened';
import type { WorkerCanary as _farm_v1_WorkerCanary, WorkerCanary__Output as _farm_v1_WorkerCanary__Output } from '../../farm/v1/WorkerCanary';
import type { WorkerForeignCode as _farm_v1_WorkerForeignCode, WorkerForeignCode__Output as _farm_v1_WorkerForeignCode__Output } from '../../farm/v1/WorkerForeignCode';
import type { WorkerCounters as _farm_v1_WorkerCounters, WorkerCounters__Output as _farm_v1_WorkerCounters__Output } from '../../farm/v1/WorkerCounters';
import type { WorkerStoreKeep as _farm_v1_WorkerStoreKeep, WorkerStoreKeep__Output as _farm_v1_WorkerStoreKeep__Output } from '../../farm/v1/WorkerStoreKeep';
import type { WorkerStoreTake as _farm_v1_WorkerStoreTake, WorkerStoreTake__Output as _farm_v1_WorkerStoreTake__Output } from '../../farm/v1/WorkerStoreTake';
import type { WorkerFpgaRequest as _farm_v1_WorkerFpgaRequest, WorkerFpgaRequest__Output as _farm_v1_WorkerFpgaRequest__Output } from '../../farm/v1/WorkerFpgaRequest';
import type { WorkerEnded as _farm_v1_WorkerEnded, WorkerEnded__Output as _farm_v1_WorkerEnded__Output } from '../../farm/v1/WorkerEnded';
import type { WorkerOutputRead as _farm_v1_WorkerOutputRead, WorkerOutputRead__Output as _farm_v1_WorkerOutputRead__Output } from '../../farm/v1/WorkerOutputRead';
import type { WorkerLaneBytes as _farm_v1_WorkerLaneBytes, WorkerLaneBytes__Output as _farm_v1_WorkerLaneBytes__Output } from '../../farm/v1/WorkerLaneBytes';

export interface WorkerToAgent {
  'ready'?: (_farm_v1_WorkerReady | null);
  'lane_opened'?: (_farm_v1_WorkerLaneOpened | null);
  'canary'?: (_farm_v1_WorkerCanary | null);
  'foreign_code'?: (_farm_v1_WorkerForeignCode | null);
  'counters'?: (_farm_v1_WorkerCounters | null);
  'store_keep'?: (_farm_v1_WorkerStoreKeep | null);
  'store_take'?: (_farm_v1_WorkerStoreTake | null);
  'program_fpga'?: (_farm_v1_WorkerFpgaRequest | null);
  'ended'?: (_farm_v1_WorkerEnded | null);
  'output_read'?: (_farm_v1_WorkerOutputRead | null);
  'lane_bytes'?: (_farm_v1_WorkerLaneBytes | null);
  'msg'?: "ready"|"lane_opened"|"canary"|"foreign_code"|"counters"|"store_keep"|"store_take"|"program_fpga"|"ended"|"output_read"|"lane_bytes";
}

export interface WorkerToAgent__Output {
  'ready'?: (_farm_v1_WorkerReady__Output | null);
  'lane_opened'?: (_farm_v1_WorkerLaneOpened__Output | null);
  'canary'?: (_farm_v1_WorkerCanary__Output | null);
  'foreign_code'?: (_farm_v1_WorkerForeignCode__Output | null);
  'counters'?: (_farm_v1_WorkerCounters__Output | null);
  'store_keep'?: (_farm_v1_WorkerStoreKeep__Output | null);
  'store_take'?: (_farm_v1_WorkerStoreTake__Output | null);
  'program_fpga'?: (_farm_v1_WorkerFpgaRequest__Output | null);
  'ended'?: (_farm_v1_WorkerEnded__Output | null);
  'output_read'?: (_farm_v1_WorkerOutputRead__Output | null);
  'lane_bytes'?: (_farm_v1_WorkerLaneBytes__Output | null);
  'msg'?: "ready"|"lane_opened"|"canary"|"foreign_code"|"counters"|"store_keep"|"store_take"|"program_fpga"|"ended"|"output_read"|"lane_bytes";
}
