// Original file: protos/farm/v1/agent.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { AgentMessage as _farm_v1_AgentMessage, AgentMessage__Output as _farm_v1_AgentMessage__Output } from '../../farm/v1/AgentMessage';
import type { BoardFrame as _farm_v1_BoardFrame, BoardFrame__Output as _farm_v1_BoardFrame__Output } from '../../farm/v1/BoardFrame';
import type { HostFrame as _farm_v1_HostFrame, HostFrame__Output as _farm_v1_HostFrame__Output } from '../../farm/v1/HostFrame';
import type { TrackerMessage as _farm_v1_TrackerMessage, TrackerMessage__Output as _farm_v1_TrackerMessage__Output } from '../../farm/v1/TrackerMessage';

/**
 * The agent side of the tracker. Agents dial out (boards behind NAT work), so
 * both streams are opened by the agent or by its session workers.
 */
export interface AgentServiceClient extends grpc.Client {
  /**
   * Control stream: the agent registers its boards, sends heartbeats and board
   * readiness, reports session ends; the tracker assigns and ends sessions.
   */
  Attach(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_farm_v1_AgentMessage, _farm_v1_TrackerMessage__Output>;
  Attach(options?: grpc.CallOptions): grpc.ClientDuplexStream<_farm_v1_AgentMessage, _farm_v1_TrackerMessage__Output>;
  /**
   * Control stream: the agent registers its boards, sends heartbeats and board
   * readiness, reports session ends; the tracker assigns and ends sessions.
   */
  attach(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_farm_v1_AgentMessage, _farm_v1_TrackerMessage__Output>;
  attach(options?: grpc.CallOptions): grpc.ClientDuplexStream<_farm_v1_AgentMessage, _farm_v1_TrackerMessage__Output>;
  
  /**
   * One session's frames on the grpc route, opened by the agent's session
   * worker with metadata `farm-session-id` and `farm-session-token` (the
   * session's ticket). The tracker relays these frames as opaque bytes
   * (identity serializers) and never decodes them.
   */
  ServeSession(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_farm_v1_BoardFrame, _farm_v1_HostFrame__Output>;
  ServeSession(options?: grpc.CallOptions): grpc.ClientDuplexStream<_farm_v1_BoardFrame, _farm_v1_HostFrame__Output>;
  /**
   * One session's frames on the grpc route, opened by the agent's session
   * worker with metadata `farm-session-id` and `farm-session-token` (the
   * session's ticket). The tracker relays these frames as opaque bytes
   * (identity serializers) and never decodes them.
   */
  serveSession(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_farm_v1_BoardFrame, _farm_v1_HostFrame__Output>;
  serveSession(options?: grpc.CallOptions): grpc.ClientDuplexStream<_farm_v1_BoardFrame, _farm_v1_HostFrame__Output>;
  
}

/**
 * The agent side of the tracker. Agents dial out (boards behind NAT work), so
 * both streams are opened by the agent or by its session workers.
 */
export interface AgentServiceHandlers extends grpc.UntypedServiceImplementation {
  /**
   * Control stream: the agent registers its boards, sends heartbeats and board
   * readiness, reports session ends; the tracker assigns and ends sessions.
   */
  Attach: grpc.handleBidiStreamingCall<_farm_v1_AgentMessage__Output, _farm_v1_TrackerMessage>;
  
  /**
   * One session's frames on the grpc route, opened by the agent's session
   * worker with metadata `farm-session-id` and `farm-session-token` (the
   * session's ticket). The tracker relays these frames as opaque bytes
   * (identity serializers) and never decodes them.
   */
  ServeSession: grpc.handleBidiStreamingCall<_farm_v1_BoardFrame__Output, _farm_v1_HostFrame>;
  
}

export interface AgentServiceDefinition extends grpc.ServiceDefinition {
  Attach: MethodDefinition<_farm_v1_AgentMessage, _farm_v1_TrackerMessage, _farm_v1_AgentMessage__Output, _farm_v1_TrackerMessage__Output>
  ServeSession: MethodDefinition<_farm_v1_BoardFrame, _farm_v1_HostFrame, _farm_v1_BoardFrame__Output, _farm_v1_HostFrame__Output>
}
