/**
 * The gRPC service definitions of farm.v1, and the channel settings every part uses.
 *
 * The session streams (HostService.Session, AgentService.ServeSession) use
 * identity serializers: each gRPC message is one encoded frame (frames.ts) that
 * the tracker forwards without decoding.
 */
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { FarmError } from "./errors.ts";
import { CHUNK_BYTES, KEEPALIVE_TIME_MS, KEEPALIVE_TIMEOUT_MS, MAX_MESSAGE_BYTES } from "./gen/contract.ts";
import { componentLogger } from "./log.ts";
import type { ProtoGrpcType as AgentProto } from "./gen/agent.ts";
import type { ProtoGrpcType as HostProto } from "./gen/host.ts";

export const PROTO_DIR = fileURLToPath(new URL(".", import.meta.url));

/**
 * CHUNK_BYTES: session data is chunked to this size (1 MiB was best in every
 * measurement). MAX_MESSAGE_BYTES: the largest gRPC message any part accepts,
 * a chunk plus generous framing. Declared once for both SDKs, with the
 * keepalive below, in protos/farm/v1/contract.json.
 */
export { CHUNK_BYTES, MAX_MESSAGE_BYTES };

/** Metadata keys on the session streams. */
export const SESSION_ID_HEADER = "farm-session-id";
export const SESSION_TOKEN_HEADER = "farm-session-token";

/**
 * Liveness of every connection to the tracker. The tracker pings each one
 * (hosts' Session streams, agents' Attach streams, workers' ServeSession
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

export const CHANNEL_OPTIONS: grpc.ChannelOptions = {
  "grpc.max_receive_message_length": MAX_MESSAGE_BYTES,
  "grpc.max_send_message_length": MAX_MESSAGE_BYTES,
  // A window of a few MiB keeps bulk transfers from stalling on loopback and LANs.
  "grpc-node.flow_control_window": 8 << 20,
  "grpc.keepalive_time_ms": 2 * KEEPALIVE_TIME_MS,
  "grpc.keepalive_timeout_ms": KEEPALIVE_TIMEOUT_MS,
  "grpc.keepalive_permit_without_calls": 1,
  // Each client keeps its own connection: a session worker must not share a
  // subchannel with an unrelated client in the same process.
  "grpc.use_local_subchannel_pool": 1,
  // No call is ever retried (a session frame must not be replayed), and the
  // retry layer buffers and re-dispatches every message it would replay.
  "grpc.enable_retries": 0,
};

/** grpc-js servers ignore `grpc-node.flow_control_window`: the tracker widens its windows itself (tracker/receive-window.ts). */
export const SERVER_OPTIONS: grpc.ServerOptions = {
  "grpc.max_receive_message_length": MAX_MESSAGE_BYTES,
  "grpc.max_send_message_length": MAX_MESSAGE_BYTES,
  "grpc.keepalive_time_ms": KEEPALIVE_TIME_MS,
  "grpc.keepalive_timeout_ms": KEEPALIVE_TIMEOUT_MS,
  "grpc.keepalive_permit_without_calls": 1,
  "grpc.http2.min_ping_interval_without_data_ms": KEEPALIVE_TIME_MS,
};

/**
 * grpc-js prints its own error lines ("E No address added out of total 1
 * resolved") on stderr, beside the farm's FarmError for the same failure.
 * Every such failure reaches the farm as an error it reports in its own
 * words, so grpc-js's lines go to the farm's log at debug level — unless
 * the user asked grpc-js for them with GRPC_VERBOSITY or GRPC_TRACE.
 */
if (!process.env.GRPC_VERBOSITY && !process.env.GRPC_TRACE) {
  const log = componentLogger("grpc-js");
  grpc.setLogger({ error: (...args: unknown[]) => log.debug({}, args.map(String).join(" ")) } as unknown as Partial<Console>);
}

const packageDefinition = protoLoader.loadSync(
  ["farm/v1/common.proto", "farm/v1/session.proto", "farm/v1/agent.proto", "farm/v1/host.proto"],
  { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true, includeDirs: [PROTO_DIR] },
);

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

/** "host:port" with a clear error for anything else. */
export function parseAddress(address: string): { host: string; port: number } {
  const i = address.lastIndexOf(":");
  const host = i > 0 ? address.slice(0, i).replace(/^\[(.*)\]$/, "$1") : "";
  const port = Number(address.slice(i + 1));
  if (!host || !Number.isInteger(port) || port <= 0 || port > 65535) {
    throw new FarmError("INVALID_ARGUMENT", `address must be HOST:PORT, got ${JSON.stringify(address)}`);
  }
  return { host, port };
}
