// Original file: protos/farm/v1/worker.proto

import type { WorkerAssign as _farm_v1_WorkerAssign, WorkerAssign__Output as _farm_v1_WorkerAssign__Output } from '../../farm/v1/WorkerAssign';
import type { WorkerLane as _farm_v1_WorkerLane, WorkerLane__Output as _farm_v1_WorkerLane__Output } from '../../farm/v1/WorkerLane';
import type { WorkerStandby as _farm_v1_WorkerStandby, WorkerStandby__Output as _farm_v1_WorkerStandby__Output } from '../../farm/v1/WorkerStandby';
import type { WorkerEnd as _farm_v1_WorkerEnd, WorkerEnd__Output as _farm_v1_WorkerEnd__Output } from '../../farm/v1/WorkerEnd';
import type { WorkerStoreTook as _farm_v1_WorkerStoreTook, WorkerStoreTook__Output as _farm_v1_WorkerStoreTook__Output } from '../../farm/v1/WorkerStoreTook';
import type { WorkerStoreKept as _farm_v1_WorkerStoreKept, WorkerStoreKept__Output as _farm_v1_WorkerStoreKept__Output } from '../../farm/v1/WorkerStoreKept';
import type { WorkerFpgaResult as _farm_v1_WorkerFpgaResult, WorkerFpgaResult__Output as _farm_v1_WorkerFpgaResult__Output } from '../../farm/v1/WorkerFpgaResult';
import type { WorkerRunCanary as _farm_v1_WorkerRunCanary, WorkerRunCanary__Output as _farm_v1_WorkerRunCanary__Output } from '../../farm/v1/WorkerRunCanary';
import type { WorkerOutput as _farm_v1_WorkerOutput, WorkerOutput__Output as _farm_v1_WorkerOutput__Output } from '../../farm/v1/WorkerOutput';
import type { WorkerTicketKey as _farm_v1_WorkerTicketKey, WorkerTicketKey__Output as _farm_v1_WorkerTicketKey__Output } from '../../farm/v1/WorkerTicketKey';
import type { WorkerPrepared as _farm_v1_WorkerPrepared, WorkerPrepared__Output as _farm_v1_WorkerPrepared__Output } from '../../farm/v1/WorkerPrepared';

export interface AgentToWorker {
  'assign'?: (_farm_v1_WorkerAssign | null);
  'lane'?: (_farm_v1_WorkerLane | null);
  'standby'?: (_farm_v1_WorkerStandby | null);
  'end'?: (_farm_v1_WorkerEnd | null);
  'store_took'?: (_farm_v1_WorkerStoreTook | null);
  'store_kept'?: (_farm_v1_WorkerStoreKept | null);
  'fpga_programmed'?: (_farm_v1_WorkerFpgaResult | null);
  'run_canary'?: (_farm_v1_WorkerRunCanary | null);
  'output'?: (_farm_v1_WorkerOutput | null);
  'ticket_key'?: (_farm_v1_WorkerTicketKey | null);
  'prepared'?: (_farm_v1_WorkerPrepared | null);
  'msg'?: "assign"|"lane"|"standby"|"end"|"store_took"|"store_kept"|"fpga_programmed"|"run_canary"|"output"|"ticket_key"|"prepared";
}

export interface AgentToWorker__Output {
  'assign'?: (_farm_v1_WorkerAssign__Output | null);
  'lane'?: (_farm_v1_WorkerLane__Output | null);
  'standby'?: (_farm_v1_WorkerStandby__Output | null);
  'end'?: (_farm_v1_WorkerEnd__Output | null);
  'store_took'?: (_farm_v1_WorkerStoreTook__Output | null);
  'store_kept'?: (_farm_v1_WorkerStoreKept__Output | null);
  'fpga_programmed'?: (_farm_v1_WorkerFpgaResult__Output | null);
  'run_canary'?: (_farm_v1_WorkerRunCanary__Output | null);
  'output'?: (_farm_v1_WorkerOutput__Output | null);
  'ticket_key'?: (_farm_v1_WorkerTicketKey__Output | null);
  'prepared'?: (_farm_v1_WorkerPrepared__Output | null);
  'msg'?: "assign"|"lane"|"standby"|"end"|"store_took"|"store_kept"|"fpga_programmed"|"run_canary"|"output"|"ticket_key"|"prepared";
}
