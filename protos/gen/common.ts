import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { BoardInfo as _farm_v1_BoardInfo, BoardInfo__Output as _farm_v1_BoardInfo__Output } from './farm/v1/BoardInfo';
import type { CanaryTiming as _farm_v1_CanaryTiming, CanaryTiming__Output as _farm_v1_CanaryTiming__Output } from './farm/v1/CanaryTiming';
import type { CudaLaunchLimits as _farm_v1_CudaLaunchLimits, CudaLaunchLimits__Output as _farm_v1_CudaLaunchLimits__Output } from './farm/v1/CudaLaunchLimits';
import type { Error as _farm_v1_Error, Error__Output as _farm_v1_Error__Output } from './farm/v1/Error';
import type { HealthChange as _farm_v1_HealthChange, HealthChange__Output as _farm_v1_HealthChange__Output } from './farm/v1/HealthChange';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  farm: {
    v1: {
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
    }
  }
}

