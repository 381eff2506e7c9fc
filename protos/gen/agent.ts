import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { AgentMessage as _farm_v1_AgentMessage, AgentMessage__Output as _farm_v1_AgentMessage__Output } from './farm/v1/AgentMessage';
import type { AgentServiceClient as _farm_v1_AgentServiceClient, AgentServiceDefinition as _farm_v1_AgentServiceDefinition } from './farm/v1/AgentService';
import type { Arg as _farm_v1_Arg, Arg__Output as _farm_v1_Arg__Output } from './farm/v1/Arg';
import type { ArrayAlloc as _farm_v1_ArrayAlloc, ArrayAlloc__Output as _farm_v1_ArrayAlloc__Output } from './farm/v1/ArrayAlloc';
import type { ArrayFill as _farm_v1_ArrayFill, ArrayFill__Output as _farm_v1_ArrayFill__Output } from './farm/v1/ArrayFill';
import type { ArrayFree as _farm_v1_ArrayFree, ArrayFree__Output as _farm_v1_ArrayFree__Output } from './farm/v1/ArrayFree';
import type { ArrayInfo as _farm_v1_ArrayInfo, ArrayInfo__Output as _farm_v1_ArrayInfo__Output } from './farm/v1/ArrayInfo';
import type { ArrayRead as _farm_v1_ArrayRead, ArrayRead__Output as _farm_v1_ArrayRead__Output } from './farm/v1/ArrayRead';
import type { ArrayWrite as _farm_v1_ArrayWrite, ArrayWrite__Output as _farm_v1_ArrayWrite__Output } from './farm/v1/ArrayWrite';
import type { AssignSession as _farm_v1_AssignSession, AssignSession__Output as _farm_v1_AssignSession__Output } from './farm/v1/AssignSession';
import type { BoardFrame as _farm_v1_BoardFrame, BoardFrame__Output as _farm_v1_BoardFrame__Output } from './farm/v1/BoardFrame';
import type { BoardHealthReport as _farm_v1_BoardHealthReport, BoardHealthReport__Output as _farm_v1_BoardHealthReport__Output } from './farm/v1/BoardHealthReport';
import type { BoardInfo as _farm_v1_BoardInfo, BoardInfo__Output as _farm_v1_BoardInfo__Output } from './farm/v1/BoardInfo';
import type { BoardLabels as _farm_v1_BoardLabels, BoardLabels__Output as _farm_v1_BoardLabels__Output } from './farm/v1/BoardLabels';
import type { BoardReady as _farm_v1_BoardReady, BoardReady__Output as _farm_v1_BoardReady__Output } from './farm/v1/BoardReady';
import type { BoardSpec as _farm_v1_BoardSpec, BoardSpec__Output as _farm_v1_BoardSpec__Output } from './farm/v1/BoardSpec';
import type { Call as _farm_v1_Call, Call__Output as _farm_v1_Call__Output } from './farm/v1/Call';
import type { CallResult as _farm_v1_CallResult, CallResult__Output as _farm_v1_CallResult__Output } from './farm/v1/CallResult';
import type { CanaryTiming as _farm_v1_CanaryTiming, CanaryTiming__Output as _farm_v1_CanaryTiming__Output } from './farm/v1/CanaryTiming';
import type { ClearStats as _farm_v1_ClearStats, ClearStats__Output as _farm_v1_ClearStats__Output } from './farm/v1/ClearStats';
import type { Close as _farm_v1_Close, Close__Output as _farm_v1_Close__Output } from './farm/v1/Close';
import type { CudaLaunchLimits as _farm_v1_CudaLaunchLimits, CudaLaunchLimits__Output as _farm_v1_CudaLaunchLimits__Output } from './farm/v1/CudaLaunchLimits';
import type { Data as _farm_v1_Data, Data__Output as _farm_v1_Data__Output } from './farm/v1/Data';
import type { DirEntry as _farm_v1_DirEntry, DirEntry__Output as _farm_v1_DirEntry__Output } from './farm/v1/DirEntry';
import type { DirListing as _farm_v1_DirListing, DirListing__Output as _farm_v1_DirListing__Output } from './farm/v1/DirListing';
import type { Download as _farm_v1_Download, Download__Output as _farm_v1_Download__Output } from './farm/v1/Download';
import type { Drain as _farm_v1_Drain, Drain__Output as _farm_v1_Drain__Output } from './farm/v1/Drain';
import type { Error as _farm_v1_Error, Error__Output as _farm_v1_Error__Output } from './farm/v1/Error';
import type { FpgaProgrammed as _farm_v1_FpgaProgrammed, FpgaProgrammed__Output as _farm_v1_FpgaProgrammed__Output } from './farm/v1/FpgaProgrammed';
import type { FunctionInfo as _farm_v1_FunctionInfo, FunctionInfo__Output as _farm_v1_FunctionInfo__Output } from './farm/v1/FunctionInfo';
import type { Grant as _farm_v1_Grant, Grant__Output as _farm_v1_Grant__Output } from './farm/v1/Grant';
import type { HealthChange as _farm_v1_HealthChange, HealthChange__Output as _farm_v1_HealthChange__Output } from './farm/v1/HealthChange';
import type { Heartbeat as _farm_v1_Heartbeat, Heartbeat__Output as _farm_v1_Heartbeat__Output } from './farm/v1/Heartbeat';
import type { HeartbeatAck as _farm_v1_HeartbeatAck, HeartbeatAck__Output as _farm_v1_HeartbeatAck__Output } from './farm/v1/HeartbeatAck';
import type { HostFrame as _farm_v1_HostFrame, HostFrame__Output as _farm_v1_HostFrame__Output } from './farm/v1/HostFrame';
import type { LaneHello as _farm_v1_LaneHello, LaneHello__Output as _farm_v1_LaneHello__Output } from './farm/v1/LaneHello';
import type { LaneOpened as _farm_v1_LaneOpened, LaneOpened__Output as _farm_v1_LaneOpened__Output } from './farm/v1/LaneOpened';
import type { LaneWelcome as _farm_v1_LaneWelcome, LaneWelcome__Output as _farm_v1_LaneWelcome__Output } from './farm/v1/LaneWelcome';
import type { Launch as _farm_v1_Launch, Launch__Output as _farm_v1_Launch__Output } from './farm/v1/Launch';
import type { ListDir as _farm_v1_ListDir, ListDir__Output as _farm_v1_ListDir__Output } from './farm/v1/ListDir';
import type { LoadModule as _farm_v1_LoadModule, LoadModule__Output as _farm_v1_LoadModule__Output } from './farm/v1/LoadModule';
import type { Measure as _farm_v1_Measure, Measure__Output as _farm_v1_Measure__Output } from './farm/v1/Measure';
import type { MeasureResult as _farm_v1_MeasureResult, MeasureResult__Output as _farm_v1_MeasureResult__Output } from './farm/v1/MeasureResult';
import type { ModuleInfo as _farm_v1_ModuleInfo, ModuleInfo__Output as _farm_v1_ModuleInfo__Output } from './farm/v1/ModuleInfo';
import type { Ok as _farm_v1_Ok, Ok__Output as _farm_v1_Ok__Output } from './farm/v1/Ok';
import type { OpenRelay as _farm_v1_OpenRelay, OpenRelay__Output as _farm_v1_OpenRelay__Output } from './farm/v1/OpenRelay';
import type { Output as _farm_v1_Output, Output__Output as _farm_v1_Output__Output } from './farm/v1/Output';
import type { OutputCheck as _farm_v1_OutputCheck, OutputCheck__Output as _farm_v1_OutputCheck__Output } from './farm/v1/OutputCheck';
import type { ParamInfo as _farm_v1_ParamInfo, ParamInfo__Output as _farm_v1_ParamInfo__Output } from './farm/v1/ParamInfo';
import type { Ping as _farm_v1_Ping, Ping__Output as _farm_v1_Ping__Output } from './farm/v1/Ping';
import type { ProgramFpga as _farm_v1_ProgramFpga, ProgramFpga__Output as _farm_v1_ProgramFpga__Output } from './farm/v1/ProgramFpga';
import type { Register as _farm_v1_Register, Register__Output as _farm_v1_Register__Output } from './farm/v1/Register';
import type { Registered as _farm_v1_Registered, Registered__Output as _farm_v1_Registered__Output } from './farm/v1/Registered';
import type { Remove as _farm_v1_Remove, Remove__Output as _farm_v1_Remove__Output } from './farm/v1/Remove';
import type { SessionBytes as _farm_v1_SessionBytes, SessionBytes__Output as _farm_v1_SessionBytes__Output } from './farm/v1/SessionBytes';
import type { SessionEnd as _farm_v1_SessionEnd, SessionEnd__Output as _farm_v1_SessionEnd__Output } from './farm/v1/SessionEnd';
import type { SessionTicket as _farm_v1_SessionTicket, SessionTicket__Output as _farm_v1_SessionTicket__Output } from './farm/v1/SessionTicket';
import type { Stats as _farm_v1_Stats, Stats__Output as _farm_v1_Stats__Output } from './farm/v1/Stats';
import type { StatsResult as _farm_v1_StatsResult, StatsResult__Output as _farm_v1_StatsResult__Output } from './farm/v1/StatsResult';
import type { TimeEvaluate as _farm_v1_TimeEvaluate, TimeEvaluate__Output as _farm_v1_TimeEvaluate__Output } from './farm/v1/TimeEvaluate';
import type { TimeResult as _farm_v1_TimeResult, TimeResult__Output as _farm_v1_TimeResult__Output } from './farm/v1/TimeResult';
import type { TrackerMessage as _farm_v1_TrackerMessage, TrackerMessage__Output as _farm_v1_TrackerMessage__Output } from './farm/v1/TrackerMessage';
import type { Upload as _farm_v1_Upload, Upload__Output as _farm_v1_Upload__Output } from './farm/v1/Upload';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  farm: {
    v1: {
      AgentMessage: MessageTypeDefinition<_farm_v1_AgentMessage, _farm_v1_AgentMessage__Output>
      /**
       * The agent side of the tracker. Agents dial out (boards behind NAT work), so
       * both streams are opened by the agent or by its session workers.
       */
      AgentService: SubtypeConstructor<typeof grpc.Client, _farm_v1_AgentServiceClient> & { service: _farm_v1_AgentServiceDefinition }
      Arg: MessageTypeDefinition<_farm_v1_Arg, _farm_v1_Arg__Output>
      ArrayAlloc: MessageTypeDefinition<_farm_v1_ArrayAlloc, _farm_v1_ArrayAlloc__Output>
      ArrayFill: MessageTypeDefinition<_farm_v1_ArrayFill, _farm_v1_ArrayFill__Output>
      ArrayFree: MessageTypeDefinition<_farm_v1_ArrayFree, _farm_v1_ArrayFree__Output>
      ArrayInfo: MessageTypeDefinition<_farm_v1_ArrayInfo, _farm_v1_ArrayInfo__Output>
      ArrayRead: MessageTypeDefinition<_farm_v1_ArrayRead, _farm_v1_ArrayRead__Output>
      ArrayWrite: MessageTypeDefinition<_farm_v1_ArrayWrite, _farm_v1_ArrayWrite__Output>
      AssignSession: MessageTypeDefinition<_farm_v1_AssignSession, _farm_v1_AssignSession__Output>
      BoardFrame: MessageTypeDefinition<_farm_v1_BoardFrame, _farm_v1_BoardFrame__Output>
      BoardHealth: EnumTypeDefinition
      BoardHealthReport: MessageTypeDefinition<_farm_v1_BoardHealthReport, _farm_v1_BoardHealthReport__Output>
      BoardInfo: MessageTypeDefinition<_farm_v1_BoardInfo, _farm_v1_BoardInfo__Output>
      BoardKind: EnumTypeDefinition
      BoardLabels: MessageTypeDefinition<_farm_v1_BoardLabels, _farm_v1_BoardLabels__Output>
      BoardReady: MessageTypeDefinition<_farm_v1_BoardReady, _farm_v1_BoardReady__Output>
      BoardSpec: MessageTypeDefinition<_farm_v1_BoardSpec, _farm_v1_BoardSpec__Output>
      BoardState: EnumTypeDefinition
      Call: MessageTypeDefinition<_farm_v1_Call, _farm_v1_Call__Output>
      CallResult: MessageTypeDefinition<_farm_v1_CallResult, _farm_v1_CallResult__Output>
      CanaryTiming: MessageTypeDefinition<_farm_v1_CanaryTiming, _farm_v1_CanaryTiming__Output>
      ClearStats: MessageTypeDefinition<_farm_v1_ClearStats, _farm_v1_ClearStats__Output>
      Close: MessageTypeDefinition<_farm_v1_Close, _farm_v1_Close__Output>
      CudaLaunchLimits: MessageTypeDefinition<_farm_v1_CudaLaunchLimits, _farm_v1_CudaLaunchLimits__Output>
      Data: MessageTypeDefinition<_farm_v1_Data, _farm_v1_Data__Output>
      DirEntry: MessageTypeDefinition<_farm_v1_DirEntry, _farm_v1_DirEntry__Output>
      DirListing: MessageTypeDefinition<_farm_v1_DirListing, _farm_v1_DirListing__Output>
      Download: MessageTypeDefinition<_farm_v1_Download, _farm_v1_Download__Output>
      Drain: MessageTypeDefinition<_farm_v1_Drain, _farm_v1_Drain__Output>
      Error: MessageTypeDefinition<_farm_v1_Error, _farm_v1_Error__Output>
      FpgaProgrammed: MessageTypeDefinition<_farm_v1_FpgaProgrammed, _farm_v1_FpgaProgrammed__Output>
      FunctionInfo: MessageTypeDefinition<_farm_v1_FunctionInfo, _farm_v1_FunctionInfo__Output>
      Grant: MessageTypeDefinition<_farm_v1_Grant, _farm_v1_Grant__Output>
      HealthChange: MessageTypeDefinition<_farm_v1_HealthChange, _farm_v1_HealthChange__Output>
      HealthReportKind: EnumTypeDefinition
      Heartbeat: MessageTypeDefinition<_farm_v1_Heartbeat, _farm_v1_Heartbeat__Output>
      HeartbeatAck: MessageTypeDefinition<_farm_v1_HeartbeatAck, _farm_v1_HeartbeatAck__Output>
      HostFrame: MessageTypeDefinition<_farm_v1_HostFrame, _farm_v1_HostFrame__Output>
      Lane: EnumTypeDefinition
      LaneHello: MessageTypeDefinition<_farm_v1_LaneHello, _farm_v1_LaneHello__Output>
      LaneOpened: MessageTypeDefinition<_farm_v1_LaneOpened, _farm_v1_LaneOpened__Output>
      LaneRole: EnumTypeDefinition
      LaneWelcome: MessageTypeDefinition<_farm_v1_LaneWelcome, _farm_v1_LaneWelcome__Output>
      Launch: MessageTypeDefinition<_farm_v1_Launch, _farm_v1_Launch__Output>
      ListDir: MessageTypeDefinition<_farm_v1_ListDir, _farm_v1_ListDir__Output>
      LoadModule: MessageTypeDefinition<_farm_v1_LoadModule, _farm_v1_LoadModule__Output>
      Measure: MessageTypeDefinition<_farm_v1_Measure, _farm_v1_Measure__Output>
      MeasureResult: MessageTypeDefinition<_farm_v1_MeasureResult, _farm_v1_MeasureResult__Output>
      ModuleInfo: MessageTypeDefinition<_farm_v1_ModuleInfo, _farm_v1_ModuleInfo__Output>
      Ok: MessageTypeDefinition<_farm_v1_Ok, _farm_v1_Ok__Output>
      OpenRelay: MessageTypeDefinition<_farm_v1_OpenRelay, _farm_v1_OpenRelay__Output>
      Output: MessageTypeDefinition<_farm_v1_Output, _farm_v1_Output__Output>
      OutputCheck: MessageTypeDefinition<_farm_v1_OutputCheck, _farm_v1_OutputCheck__Output>
      ParamInfo: MessageTypeDefinition<_farm_v1_ParamInfo, _farm_v1_ParamInfo__Output>
      Ping: MessageTypeDefinition<_farm_v1_Ping, _farm_v1_Ping__Output>
      ProgramFpga: MessageTypeDefinition<_farm_v1_ProgramFpga, _farm_v1_ProgramFpga__Output>
      Register: MessageTypeDefinition<_farm_v1_Register, _farm_v1_Register__Output>
      Registered: MessageTypeDefinition<_farm_v1_Registered, _farm_v1_Registered__Output>
      Remove: MessageTypeDefinition<_farm_v1_Remove, _farm_v1_Remove__Output>
      Route: EnumTypeDefinition
      SessionBytes: MessageTypeDefinition<_farm_v1_SessionBytes, _farm_v1_SessionBytes__Output>
      SessionEnd: MessageTypeDefinition<_farm_v1_SessionEnd, _farm_v1_SessionEnd__Output>
      SessionTicket: MessageTypeDefinition<_farm_v1_SessionTicket, _farm_v1_SessionTicket__Output>
      Stats: MessageTypeDefinition<_farm_v1_Stats, _farm_v1_Stats__Output>
      StatsResult: MessageTypeDefinition<_farm_v1_StatsResult, _farm_v1_StatsResult__Output>
      TimeEvaluate: MessageTypeDefinition<_farm_v1_TimeEvaluate, _farm_v1_TimeEvaluate__Output>
      TimeResult: MessageTypeDefinition<_farm_v1_TimeResult, _farm_v1_TimeResult__Output>
      TrackerMessage: MessageTypeDefinition<_farm_v1_TrackerMessage, _farm_v1_TrackerMessage__Output>
      Upload: MessageTypeDefinition<_farm_v1_Upload, _farm_v1_Upload__Output>
    }
  }
}

