/**
 * The gRPC service definitions of farm.v1, the limits every message keeps and
 * the metadata keys of the session streams. How channels and servers are set
 * up (options, keepalive, grpc-js's own log lines) is runtime/grpc-options.ts.
 *
 * The session streams (HostService.Session, AgentService.ServeSession) use
 * identity serializers: each gRPC message is one encoded frame (frames.ts) that
 * the tracker forwards without decoding.
 */
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { CHUNK_BYTES, DEFAULT_TRACKER_PORT, KEEPALIVE_TIME_MS, KEEPALIVE_TIMEOUT_MS, MAX_MESSAGE_BYTES } from "./gen/contract.ts";
import type { ProtoGrpcType as AgentProto } from "./gen/agent.ts";
import type { ProtoGrpcType as HostProto } from "./gen/host.ts";

export const PROTO_DIR = fileURLToPath(new URL(".", import.meta.url));

/**
 * CHUNK_BYTES: session data is chunked to this size (1 MiB was best in every
 * measurement). MAX_MESSAGE_BYTES: the largest gRPC message any part accepts,
 * a chunk plus generous framing. Declared once for both SDKs, with the
 * keepalive below, in protos/farm/v1/contract.json.
 */
export { CHUNK_BYTES, DEFAULT_TRACKER_PORT, MAX_MESSAGE_BYTES };

/** Metadata keys on the session streams. */
export const SESSION_ID_HEADER = "farm-session-id";
export const SESSION_TOKEN_HEADER = "farm-session-token";

/**
 * Liveness of every connection to the tracker. The tracker pings each one
 * (hosts' Session streams, agents' Attach streams, agents' ServeSession
 * streams) every KEEPALIVE_TIME_MS and drops it when a ping goes unanswered
 * for KEEPALIVE_TIMEOUT_MS: a host that vanishes without a FIN (cable pulled,
 * laptop lid closed, a partition) has its Session stream broken and its lease
 * ended (CANCELLED) within LIVENESS_MS, and its board returns. A partition
 * shorter than the timeout costs nothing. Clients ping the tracker at twice
 * the interval (the server allows one ping per 5 s), so a host waiting on a
 * tracker that vanished learns it within about 15 s rather than never.
 */
export { KEEPALIVE_TIME_MS, KEEPALIVE_TIMEOUT_MS };
export const LIVENESS_MS = KEEPALIVE_TIME_MS + KEEPALIVE_TIMEOUT_MS;

const packageDefinition = protoLoader.loadSync(["farm/v1/common.proto", "farm/v1/session.proto", "farm/v1/agent.proto", "farm/v1/host.proto"], {
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [PROTO_DIR],
});

function toBuffer(value: Uint8Array): Buffer {
  return Buffer.isBuffer(value) ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength);
}

function passThrough(method: protoLoader.MethodDefinition<object, object>): void {
  const m = method as unknown as Record<string, unknown>;
  m.requestSerialize = toBuffer;
  m.requestDeserialize = (b: Buffer) => b;
  m.responseSerialize = toBuffer;
  m.responseDeserialize = (b: Buffer) => b;
}

passThrough((packageDefinition["farm.v1.HostService"] as protoLoader.ServiceDefinition).Session!);

/** A Summary reply the tracker encoded already (protos/summary-reply.ts) goes out as it is; an object is encoded as usual. */
const summary = (packageDefinition["farm.v1.HostService"] as protoLoader.ServiceDefinition).Summary! as unknown as Record<string, (v: unknown) => Buffer>;
const encodeSummary = summary.responseSerialize!;
summary.responseSerialize = (v: unknown) => (Buffer.isBuffer(v) ? v : encodeSummary(v));
passThrough((packageDefinition["farm.v1.AgentService"] as protoLoader.ServiceDefinition).ServeSession!);

const loaded = grpc.loadPackageDefinition(packageDefinition) as unknown as AgentProto & HostProto;

export const HostService = loaded.farm.v1.HostService;
export const AgentService = loaded.farm.v1.AgentService;

export type { HostServiceClient, HostServiceHandlers } from "./gen/farm/v1/HostService.ts";
export type { AgentServiceClient, AgentServiceHandlers } from "./gen/farm/v1/AgentService.ts";
