/**
 * Widens the HTTP/2 receive windows of the tracker's gRPC server.
 *
 * grpc-js servers ignore `grpc-node.flow_control_window` (1.14 passes only
 * maxSessionMemory and maxConcurrentStreams to http2.createServer), so every
 * byte flowing *into* the tracker — uploads from hosts, downloads and array
 * reads from workers — crosses a 64 KiB window: ~25,000 context switches per
 * GB and half the throughput (measured, BENCHMARKS.md). There is no public
 * hook, so this reaches into two private fields of grpc.Server; if a grpc-js
 * upgrade renames them, it logs and leaves the defaults.
 */
import type * as grpc from "@grpc/grpc-js";
import type { Http2Server, Http2Session } from "node:http2";
import type { Logger } from "../runtime/index.ts";

export const RECEIVE_WINDOW_BYTES = 8 << 20;

interface GrpcServerInternals {
  commonServerOptions?: { settings?: Record<string, unknown> };
  http2Servers?: Map<Http2Server, unknown>;
}

/** Call before bindAsync: the per-stream window the server advertises. */
export function widenStreamWindow(server: grpc.Server, log: Logger): void {
  const internals = server as unknown as GrpcServerInternals;
  if (!internals.commonServerOptions) {
    log.warn({}, "grpc-js internals changed: cannot widen the tracker's HTTP/2 stream window");
    return;
  }
  internals.commonServerOptions.settings = { ...internals.commonServerOptions.settings, initialWindowSize: RECEIVE_WINDOW_BYTES };
}

/** Call after bindAsync: the connection-level window of every new session. */
export function widenConnectionWindow(server: grpc.Server, log: Logger): void {
  const servers = (server as unknown as GrpcServerInternals).http2Servers;
  if (!servers) {
    log.warn({}, "grpc-js internals changed: cannot widen the tracker's HTTP/2 connection window");
    return;
  }
  for (const http2Server of servers.keys()) {
    http2Server.on("session", (session: Http2Session) => {
      session.once("connect", () => session.setLocalWindowSize(RECEIVE_WINDOW_BYTES));
      if (!session.connecting) session.setLocalWindowSize(RECEIVE_WINDOW_BYTES);
    });
  }
}
