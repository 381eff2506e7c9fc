/**
 * The channel and server settings every part's gRPC connections use, and
 * where grpc-js's own log lines go.
 */
import * as grpc from "@grpc/grpc-js";
import { FarmError, KEEPALIVE_TIME_MS, KEEPALIVE_TIMEOUT_MS, MAX_MESSAGE_BYTES } from "../protos/index.ts";
import { componentLogger, type Logger } from "./log.ts";

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
  // Made at grpc-js's first line, not at import: the level is read when the first logger is made (runtime/log.ts).
  let log: Logger | undefined;
  grpc.setLogger({ error: (...args: unknown[]) => (log ??= componentLogger("grpc-js")).debug({}, args.map(String).join(" ")) } as unknown as Partial<Console>);
}

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
