import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { AgentToWorker as _farm_v1_AgentToWorker, AgentToWorker__Output as _farm_v1_AgentToWorker__Output } from './farm/v1/AgentToWorker';
import type { BoardInfo as _farm_v1_BoardInfo, BoardInfo__Output as _farm_v1_BoardInfo__Output } from './farm/v1/BoardInfo';
import type { CanaryTiming as _farm_v1_CanaryTiming, CanaryTiming__Output as _farm_v1_CanaryTiming__Output } from './farm/v1/CanaryTiming';
import type { CudaLaunchLimits as _farm_v1_CudaLaunchLimits, CudaLaunchLimits__Output as _farm_v1_CudaLaunchLimits__Output } from './farm/v1/CudaLaunchLimits';
import type { Error as _farm_v1_Error, Error__Output as _farm_v1_Error__Output } from './farm/v1/Error';
import type { HealthChange as _farm_v1_HealthChange, HealthChange__Output as _farm_v1_HealthChange__Output } from './farm/v1/HealthChange';
import type { WorkerAssign as _farm_v1_WorkerAssign, WorkerAssign__Output as _farm_v1_WorkerAssign__Output } from './farm/v1/WorkerAssign';
import type { WorkerCanary as _farm_v1_WorkerCanary, WorkerCanary__Output as _farm_v1_WorkerCanary__Output } from './farm/v1/WorkerCanary';
import type { WorkerCounters as _farm_v1_WorkerCounters, WorkerCounters__Output as _farm_v1_WorkerCounters__Output } from './farm/v1/WorkerCounters';
import type { WorkerEnd as _farm_v1_WorkerEnd, WorkerEnd__Output as _farm_v1_WorkerEnd__Output } from './farm/v1/WorkerEnd';
import type { WorkerEnded as _farm_v1_WorkerEnded, WorkerEnded__Output as _farm_v1_WorkerEnded__Output } from './farm/v1/WorkerEnded';
import type { WorkerForeignCode as _farm_v1_WorkerForeignCode, WorkerForeignCode__Output as _farm_v1_WorkerForeignCode__Output } from './farm/v1/WorkerForeignCode';
import type { WorkerFpgaRequest as _farm_v1_WorkerFpgaRequest, WorkerFpgaRequest__Output as _farm_v1_WorkerFpgaRequest__Output } from './farm/v1/WorkerFpgaRequest';
import type { WorkerFpgaResult as _farm_v1_WorkerFpgaResult, WorkerFpgaResult__Output as _farm_v1_WorkerFpgaResult__Output } from './farm/v1/WorkerFpgaResult';
import type { WorkerLane as _farm_v1_WorkerLane, WorkerLane__Output as _farm_v1_WorkerLane__Output } from './farm/v1/WorkerLane';
import type { WorkerLaneBytes as _farm_v1_WorkerLaneBytes, WorkerLaneBytes__Output as _farm_v1_WorkerLaneBytes__Output } from './farm/v1/WorkerLaneBytes';
import type { WorkerLaneOpened as _farm_v1_WorkerLaneOpened, WorkerLaneOpened__Output as _farm_v1_WorkerLaneOpened__Output } from './farm/v1/WorkerLaneOpened';
import type { WorkerOutput as _farm_v1_WorkerOutput, WorkerOutput__Output as _farm_v1_WorkerOutput__Output } from './farm/v1/WorkerOutput';
import type { WorkerOutputRead as _farm_v1_WorkerOutputRead, WorkerOutputRead__Output as _farm_v1_WorkerOutputRead__Output } from './farm/v1/WorkerOutputRead';
import type { WorkerPrepared as _farm_v1_WorkerPrepared, WorkerPrepared__Output as _farm_v1_WorkerPrepared__Output } from './farm/v1/WorkerPrepared';
import type { WorkerReady as _farm_v1_WorkerReady, WorkerReady__Output as _farm_v1_WorkerReady__Output } from './farm/v1/WorkerReady';
import type { WorkerRunCanary as _farm_v1_WorkerRunCanary, WorkerRunCanary__Output as _farm_v1_WorkerRunCanary__Output } from './farm/v1/WorkerRunCanary';
import type { WorkerStandby as _farm_v1_WorkerStandby, WorkerStandby__Output as _farm_v1_WorkerStandby__Output } from './farm/v1/WorkerStandby';
import type { WorkerStoreKeep as _farm_v1_WorkerStoreKeep, WorkerStoreKeep__Output as _farm_v1_WorkerStoreKeep__Output } from './farm/v1/WorkerStoreKeep';
import type { WorkerStoreKept as _farm_v1_WorkerStoreKept, WorkerStoreKept__Output as _farm_v1_WorkerStoreKept__Output } from './farm/v1/WorkerStoreKept';
import type { WorkerStoreTake as _farm_v1_WorkerStoreTake, WorkerStoreTake__Output as _farm_v1_WorkerStoreTake__Output } from './farm/v1/WorkerStoreTake';
import type { WorkerStoreTook as _farm_v1_WorkerStoreTook, WorkerStoreTook__Output as _farm_v1_WorkerStoreTook__Output } from './farm/v1/WorkerStoreTook';
import type { WorkerTicketKey as _farm_v1_WorkerTicketKey, WorkerTicketKey__Output as _farm_v1_WorkerTicketKey__Output } from './farm/v1/WorkerTicketKey';
import type { WorkerToAgent as _farm_v1_WorkerToAgent, WorkerToAgent__Output as _farm_v1_WorkerToAgent__Output } from './farm/v1/WorkerToAgent';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  farm: {
    v1: {
      AgentToWorker: MessageTypeDefinition<_farm_v1_AgentToWorker, _farm_v1_AgentToWorker__Output>
      BoardHealth: EnumTypeDefinition
      BoardInfo: MessageTypeDefinition<_farm_v1_BoardInfo, _farm_v1_BoardInfo__Output>
      BoardKind: EnumTypeDefinition
      BoardState: EnumTypeDefinition
      CanaryTiming: MessageTypeDefinition<_farm_v1_CanaryTiming, _farm_v1_CanaryTiming__Output>
      CudaLaunchLimits: MessageTypeDefinition<_farm_v1_CudaLaunchLimits, _farm_v1_CudaLaunchLimits__Output>
      Error: MessageTypeDefinition<_farm_v1_Error, _farm_v1_Error__Output>
      HealthChange: MessageTypeDefinition<_farm_v1_HealthChange, _farm_v1_HealthChange__Output>
      Lane: EnumTypeDefinition
      Route: EnumTypeDefinition
      WorkerAssign: MessageTypeDefinition<_farm_v1_WorkerAssign, _farm_v1_WorkerAssign__Output>
      WorkerCanary: MessageTypeDefinition<_farm_v1_WorkerCanary, _farm_v1_WorkerCanary__Output>
      WorkerCounters: MessageTypeDefinition<_farm_v1_WorkerCounters, _farm_v1_WorkerCounters__Output>
      WorkerEnd: MessageTypeDefinition<_farm_v1_WorkerEnd, _farm_v1_WorkerEnd__Output>
      WorkerEnded: MessageTypeDefinition<_farm_v1_WorkerEnded, _farm_v1_WorkerEnded__Output>
      WorkerForeignCode: MessageTypeDefinition<_farm_v1_WorkerForeignCode, _farm_v1_WorkerForeignCode__Output>
      WorkerFpgaRequest: MessageTypeDefinition<_farm_v1_WorkerFpgaRequest, _farm_v1_WorkerFpgaRequest__Output>
      WorkerFpgaResult: MessageTypeDefinition<_farm_v1_WorkerFpgaResult, _farm_v1_WorkerFpgaResult__Output>
      WorkerLane: MessageTypeDefinition<_farm_v1_WorkerLane, _farm_v1_WorkerLane__Output>
      WorkerLaneBytes: MessageTypeDefinition<_farm_v1_WorkerLaneBytes, _farm_v1_WorkerLaneBytes__Output>
      WorkerLaneOpened: MessageTypeDefinition<_farm_v1_WorkerLaneOpened, _farm_v1_WorkerLaneOpened__Output>
      WorkerOutput: MessageTypeDefinition<_farm_v1_WorkerOutput, _farm_v1_WorkerOutput__Output>
      WorkerOutputRead: MessageTypeDefinition<_farm_v1_WorkerOutputRead, _farm_v1_WorkerOutputRead__Output>
      WorkerPrepared: MessageTypeDefinition<_farm_v1_WorkerPrepared, _farm_v1_WorkerPrepared__Output>
      WorkerReady: MessageTypeDefinition<_farm_v1_WorkerReady, _farm_v1_WorkerReady__Output>
      WorkerRunCanary: MessageTypeDefinition<_farm_v1_WorkerRunCanary, _farm_v1_WorkerRunCanary__Output>
      WorkerStandby: MessageTypeDefinition<_farm_v1_WorkerStandby, _farm_v1_WorkerStandby__Output>
      WorkerStoreKeep: MessageTypeDefinition<_farm_v1_WorkerStoreKeep, _farm_v1_WorkerStoreKeep__Output>
      WorkerStoreKept: MessageTypeDefinition<_farm_v1_WorkerStoreKept, _farm_v1_WorkerStoreKept__Output>
      WorkerStoreTake: MessageTypeDefinition<_farm_v1_WorkerStoreTake, _farm_v1_WorkerStoreTake__Output>
      WorkerStoreTook: MessageTypeDefinition<_farm_v1_WorkerStoreTook, _farm_v1_WorkerStoreTook__Output>
      WorkerTicketKey: MessageTypeDefinition<_farm_v1_WorkerTicketKey, _farm_v1_WorkerTicketKey__Output>
      WorkerToAgent: MessageTypeDefinition<_farm_v1_WorkerToAgent, _farm_v1_WorkerToAgent__Output>
    }
  }
}

