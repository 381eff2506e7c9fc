import type * as grpc from '@grpc/grpc-js';
import type { MessageTypeDefinition } from '@grpc/proto-loader';

import type { BundleEntry as _farm_v1_BundleEntry, BundleEntry__Output as _farm_v1_BundleEntry__Output } from './farm/v1/BundleEntry';
import type { BundleFunction as _farm_v1_BundleFunction, BundleFunction__Output as _farm_v1_BundleFunction__Output } from './farm/v1/BundleFunction';
import type { BundleLaunch as _farm_v1_BundleLaunch, BundleLaunch__Output as _farm_v1_BundleLaunch__Output } from './farm/v1/BundleLaunch';
import type { BundleParam as _farm_v1_BundleParam, BundleParam__Output as _farm_v1_BundleParam__Output } from './farm/v1/BundleParam';
import type { BundleShape as _farm_v1_BundleShape, BundleShape__Output as _farm_v1_BundleShape__Output } from './farm/v1/BundleShape';
import type { ModuleBundle as _farm_v1_ModuleBundle, ModuleBundle__Output as _farm_v1_ModuleBundle__Output } from './farm/v1/ModuleBundle';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  farm: {
    v1: {
      BundleEntry: MessageTypeDefinition<_farm_v1_BundleEntry, _farm_v1_BundleEntry__Output>
      BundleFunction: MessageTypeDefinition<_farm_v1_BundleFunction, _farm_v1_BundleFunction__Output>
      BundleLaunch: MessageTypeDefinition<_farm_v1_BundleLaunch, _farm_v1_BundleLaunch__Output>
      BundleParam: MessageTypeDefinition<_farm_v1_BundleParam, _farm_v1_BundleParam__Output>
      BundleShape: MessageTypeDefinition<_farm_v1_BundleShape, _farm_v1_BundleShape__Output>
      ModuleBundle: MessageTypeDefinition<_farm_v1_ModuleBundle, _farm_v1_ModuleBundle__Output>
    }
  }
}

