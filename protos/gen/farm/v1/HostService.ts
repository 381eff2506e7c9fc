// Original file: protos/farm/v1/host.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { BoardCommandReply as _farm_v1_BoardCommandReply, BoardCommandReply__Output as _farm_v1_BoardCommandReply__Output } from '../../farm/v1/BoardCommandReply';
import type { BoardCommandRequest as _farm_v1_BoardCommandRequest, BoardCommandRequest__Output as _farm_v1_BoardCommandRequest__Output } from '../../farm/v1/BoardCommandRequest';
import type { BoardFrame as _farm_v1_BoardFrame, BoardFrame__Output as _farm_v1_BoardFrame__Output } from '../../farm/v1/BoardFrame';
import type { HostFrame as _farm_v1_HostFrame, HostFrame__Output as _farm_v1_HostFrame__Output } from '../../farm/v1/HostFrame';
import type { ReleaseReply as _farm_v1_ReleaseReply, ReleaseReply__Output as _farm_v1_ReleaseReply__Output } from '../../farm/v1/ReleaseReply';
import type { ReleaseRequest as _farm_v1_ReleaseRequest, ReleaseRequest__Output as _farm_v1_ReleaseRequest__Output } from '../../farm/v1/ReleaseRequest';
import type { SummaryReply as _farm_v1_SummaryReply, SummaryReply__Output as _farm_v1_SummaryReply__Output } from '../../farm/v1/SummaryReply';
import type { SummaryRequest as _farm_v1_SummaryRequest, SummaryRequest__Output as _farm_v1_SummaryRequest__Output } from '../../farm/v1/SummaryRequest';
import type { TokensReply as _farm_v1_TokensReply, TokensReply__Output as _farm_v1_TokensReply__Output } from '../../farm/v1/TokensReply';
import type { TokensRequest as _farm_v1_TokensRequest, TokensRequest__Output as _farm_v1_TokensRequest__Output } from '../../farm/v1/TokensRequest';

/**
 * The host side of the tracker: what the host SDK and `kfarm status` call.
 */
export interface HostServiceClient extends grpc.Client {
  /**
   * Operator commands on one board: drain (no new sessions), quarantine, restore.
   */
  BoardCommand(argument: _farm_v1_BoardCommandRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_farm_v1_BoardCommandReply__Output>): grpc.ClientUnaryCall;
  BoardCommand(argument: _farm_v1_BoardCommandRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_farm_v1_BoardCommandReply__Output>): grpc.ClientUnaryCall;
  BoardCommand(argument: _farm_v1_BoardCommandRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_farm_v1_BoardCommandReply__Output>): grpc.ClientUnaryCall;
  BoardCommand(argument: _farm_v1_BoardCommandRequest, callback: grpc.requestCallback<_farm_v1_BoardCommandReply__Output>): grpc.ClientUnaryCall;
  /**
   * Operator commands on one board: drain (no new sessions), quarantine, restore.
   */
  boardCommand(argument: _farm_v1_BoardCommandRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_farm_v1_BoardCommandReply__Output>): grpc.ClientUnaryCall;
  boardCommand(argument: _farm_v1_BoardCommandRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_farm_v1_BoardCommandReply__Output>): grpc.ClientUnaryCall;
  boardCommand(argument: _farm_v1_BoardCommandRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_farm_v1_BoardCommandReply__Output>): grpc.ClientUnaryCall;
  boardCommand(argument: _farm_v1_BoardCommandRequest, callback: grpc.requestCallback<_farm_v1_BoardCommandReply__Output>): grpc.ClientUnaryCall;
  
  ReleaseSession(argument: _farm_v1_ReleaseRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_farm_v1_ReleaseReply__Output>): grpc.ClientUnaryCall;
  ReleaseSession(argument: _farm_v1_ReleaseRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_farm_v1_ReleaseReply__Output>): grpc.ClientUnaryCall;
  ReleaseSession(argument: _farm_v1_ReleaseRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_farm_v1_ReleaseReply__Output>): grpc.ClientUnaryCall;
  ReleaseSession(argument: _farm_v1_ReleaseRequest, callback: grpc.requestCallback<_farm_v1_ReleaseReply__Output>): grpc.ClientUnaryCall;
  releaseSession(argument: _farm_v1_ReleaseRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_farm_v1_ReleaseReply__Output>): grpc.ClientUnaryCall;
  releaseSession(argument: _farm_v1_ReleaseRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_farm_v1_ReleaseReply__Output>): grpc.ClientUnaryCall;
  releaseSession(argument: _farm_v1_ReleaseRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_farm_v1_ReleaseReply__Output>): grpc.ClientUnaryCall;
  releaseSession(argument: _farm_v1_ReleaseRequest, callback: grpc.requestCallback<_farm_v1_ReleaseReply__Output>): grpc.ClientUnaryCall;
  
  /**
   * A session in one round trip. The request travels in the metadata
   * `farm-session-request-bin` (an encoded SessionRequest); the stream waits in
   * the key's queue, and its first message is a BoardFrame with the Grant. On
   * the grpc route the session's frames follow on this stream, relayed to the
   * board's worker as opaque bytes; on the direct and relay routes they travel
   * on the lane and this stream carries only the end (BoardFrame.end). Either
   * way the stream lives as long as the lease: the host's leaving ends it.
   */
  Session(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_farm_v1_HostFrame, _farm_v1_BoardFrame__Output>;
  Session(options?: grpc.CallOptions): grpc.ClientDuplexStream<_farm_v1_HostFrame, _farm_v1_BoardFrame__Output>;
  /**
   * A session in one round trip. The request travels in the metadata
   * `farm-session-request-bin` (an encoded SessionRequest); the stream waits in
   * the key's queue, and its first message is a BoardFrame with the Grant. On
   * the grpc route the session's frames follow on this stream, relayed to the
   * board's worker as opaque bytes; on the direct and relay routes they travel
   * on the lane and this stream carries only the end (BoardFrame.end). Either
   * way the stream lives as long as the lease: the host's leaving ends it.
   */
  session(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_farm_v1_HostFrame, _farm_v1_BoardFrame__Output>;
  session(options?: grpc.CallOptions): grpc.ClientDuplexStream<_farm_v1_HostFrame, _farm_v1_BoardFrame__Output>;
  
  /**
   * TVM's query_rpc_tracker information, per key and per board.
   */
  Summary(argument: _farm_v1_SummaryRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_farm_v1_SummaryReply__Output>): grpc.ClientUnaryCall;
  Summary(argument: _farm_v1_SummaryRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_farm_v1_SummaryReply__Output>): grpc.ClientUnaryCall;
  Summary(argument: _farm_v1_SummaryRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_farm_v1_SummaryReply__Output>): grpc.ClientUnaryCall;
  Summary(argument: _farm_v1_SummaryRequest, callback: grpc.requestCallback<_farm_v1_SummaryReply__Output>): grpc.ClientUnaryCall;
  /**
   * TVM's query_rpc_tracker information, per key and per board.
   */
  summary(argument: _farm_v1_SummaryRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_farm_v1_SummaryReply__Output>): grpc.ClientUnaryCall;
  summary(argument: _farm_v1_SummaryRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_farm_v1_SummaryReply__Output>): grpc.ClientUnaryCall;
  summary(argument: _farm_v1_SummaryRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_farm_v1_SummaryReply__Output>): grpc.ClientUnaryCall;
  summary(argument: _farm_v1_SummaryRequest, callback: grpc.requestCallback<_farm_v1_SummaryReply__Output>): grpc.ClientUnaryCall;
  
  /**
   * Token administration, for operator tokens: create, list, revoke (`kfarm token --tracker`).
   */
  Tokens(argument: _farm_v1_TokensRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_farm_v1_TokensReply__Output>): grpc.ClientUnaryCall;
  Tokens(argument: _farm_v1_TokensRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_farm_v1_TokensReply__Output>): grpc.ClientUnaryCall;
  Tokens(argument: _farm_v1_TokensRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_farm_v1_TokensReply__Output>): grpc.ClientUnaryCall;
  Tokens(argument: _farm_v1_TokensRequest, callback: grpc.requestCallback<_farm_v1_TokensReply__Output>): grpc.ClientUnaryCall;
  /**
   * Token administration, for operator tokens: create, list, revoke (`kfarm token --tracker`).
   */
  tokens(argument: _farm_v1_TokensRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_farm_v1_TokensReply__Output>): grpc.ClientUnaryCall;
  tokens(argument: _farm_v1_TokensRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_farm_v1_TokensReply__Output>): grpc.ClientUnaryCall;
  tokens(argument: _farm_v1_TokensRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_farm_v1_TokensReply__Output>): grpc.ClientUnaryCall;
  tokens(argument: _farm_v1_TokensRequest, callback: grpc.requestCallback<_farm_v1_TokensReply__Output>): grpc.ClientUnaryCall;
  
}

/**
 * The host side of the tracker: what the host SDK and `kfarm status` call.
 */
export interface HostServiceHandlers extends grpc.UntypedServiceImplementation {
  /**
   * Operator commands on one board: drain (no new sessions), quarantine, restore.
   */
  BoardCommand: grpc.handleUnaryCall<_farm_v1_BoardCommandRequest__Output, _farm_v1_BoardCommandReply>;
  
  ReleaseSession: grpc.handleUnaryCall<_farm_v1_ReleaseRequest__Output, _farm_v1_ReleaseReply>;
  
  /**
   * A session in one round trip. The request travels in the metadata
   * `farm-session-request-bin` (an encoded SessionRequest); the stream waits in
   * the key's queue, and its first message is a BoardFrame with the Grant. On
   * the grpc route the session's frames follow on this stream, relayed to the
   * board's worker as opaque bytes; on the direct and relay routes they travel
   * on the lane and this stream carries only the end (BoardFrame.end). Either
   * way the stream lives as long as the lease: the host's leaving ends it.
   */
  Session: grpc.handleBidiStreamingCall<_farm_v1_HostFrame__Output, _farm_v1_BoardFrame>;
  
  /**
   * TVM's query_rpc_tracker information, per key and per board.
   */
  Summary: grpc.handleUnaryCall<_farm_v1_SummaryRequest__Output, _farm_v1_SummaryReply>;
  
  /**
   * Token administration, for operator tokens: create, list, revoke (`kfarm token --tracker`).
   */
  Tokens: grpc.handleUnaryCall<_farm_v1_TokensRequest__Output, _farm_v1_TokensReply>;
  
}

export interface HostServiceDefinition extends grpc.ServiceDefinition {
  BoardCommand: MethodDefinition<_farm_v1_BoardCommandRequest, _farm_v1_BoardCommandReply, _farm_v1_BoardCommandRequest__Output, _farm_v1_BoardCommandReply__Output>
  ReleaseSession: MethodDefinition<_farm_v1_ReleaseRequest, _farm_v1_ReleaseReply, _farm_v1_ReleaseRequest__Output, _farm_v1_ReleaseReply__Output>
  Session: MethodDefinition<_farm_v1_HostFrame, _farm_v1_BoardFrame, _farm_v1_HostFrame__Output, _farm_v1_BoardFrame__Output>
  Summary: MethodDefinition<_farm_v1_SummaryRequest, _farm_v1_SummaryReply, _farm_v1_SummaryRequest__Output, _farm_v1_SummaryReply__Output>
  Tokens: MethodDefinition<_farm_v1_TokensRequest, _farm_v1_TokensReply, _farm_v1_TokensRequest__Output, _farm_v1_TokensReply__Output>
}
