/**
 * The gate of the tracker's gRPC port: every call is authenticated from its
 * metadata before one byte of its body is taken in, and each method takes
 * messages no larger than it legitimately needs.
 *
 * Without it, grpc-js reads and decodes a request body (up to the server's
 * MAX_MESSAGE_BYTES, 16 MiB) before the handler sees the call: 16 token-less
 * connections × 5 streams of 15 MiB Summary requests took the tracker from
 * 127 to 1,633 MiB, agents missed heartbeats and were detached, and the
 * callers were answered `INTERNAL: Error deserializing request`, not
 * UNAUTHENTICATED. A grpc-js server interceptor sees the metadata while the
 * HTTP/2 stream is still paused (grpc-js reads a body only after the
 * metadata listener passes it on), so a refused call is answered from its
 * headers alone and its body is discarded as it arrives, never buffered.
 *
 * Each method's gate names what it needs: a token (tracker/auth.ts, the one
 * authorization point, which audits the refusal), or for a worker's
 * ServeSession stream the session's ticket; a method with no gate is refused
 * (closed by default, so a new RPC cannot ship unguarded).
 */
import * as grpc from "@grpc/grpc-js";
import { constants as h2, type ServerHttp2Stream } from "node:http2";
import { FarmError } from "../protos/index.ts";
import { type Logger } from "../runtime/index.ts";

/** A unary control call (Summary, ReleaseSession, BoardCommand, Tokens): a few hundred bytes; a token creation with many keys stays far below. */
export const CONTROL_MESSAGE_BYTES = 64 << 10;
/** An agent's Attach stream: its registration lists every board with its labels and capabilities, the largest message it sends. */
export const AGENT_MESSAGE_BYTES = 1 << 20;

export interface MethodGate {
  /** The largest message this method takes (bytes): what it legitimately carries, not the server's maximum. */
  readonly maxMessageBytes: number;
  /** Throws a FarmError (UNAUTHENTICATED, PERMISSION_DENIED, NOT_FOUND) when the call's metadata does not admit it. */
  admit(metadata: grpc.Metadata, peer: string): void;
}

/** grpc-js's base call keeps its body decoder private; the gate lowers its limit per method. */
interface BaseCallInternals {
  decoder?: { maxReadMessageLength?: number };
  maxReceiveMessageSize?: number;
  stream?: ServerHttp2Stream;
}

/**
 * A server interceptor applying `gates` (by method path,
 * `/farm.v1.HostService/Summary`). The per-method message limit and the
 * reset of a refused call's stream reach into grpc-js's base call (there is
 * no public hook for either); if an upgrade renames its fields, the limit
 * logs once and the server-wide one holds, and a refused body is drained.
 */
export function callGate(gates: ReadonlyMap<string, MethodGate>, log: Logger): grpc.ServerInterceptor {
  let warned = false;
  return (method, call) => {
    const gate = gates.get(method.path);
    if (gate) {
      const base = call as unknown as BaseCallInternals;
      if (base.decoder && typeof base.decoder.maxReadMessageLength === "number" && typeof base.maxReceiveMessageSize === "number") {
        base.decoder.maxReadMessageLength = gate.maxMessageBytes;
        base.maxReceiveMessageSize = gate.maxMessageBytes;
      } else if (!warned) {
        warned = true;
        log.warn({}, "grpc-js internals changed: the tracker cannot lower each method's message limit; the server-wide limit holds");
      }
    }
    return new grpc.ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMetadata: (metadata, pass) => {
            try {
              if (!gate) throw new FarmError("INTERNAL", `the tracker has no gate for ${method.path}, so it refuses it: a tracker bug, please report it`);
              gate.admit(metadata, call.getPeer());
            } catch (err) {
              // Answered from the headers alone. Then RST_STREAM(NO_ERROR), HTTP/2's "answered, stop sending"
              // (RFC 9113 §8.1): the caller stops sending its body instead of pushing it through windows the
              // tracker would have to drain (grpc-js resumes a finished call's stream to drop what still arrives).
              const status = FarmError.from(err).toGrpc();
              call.sendStatus({ code: status.code!, details: status.details!, metadata: status.metadata ?? null });
              const stream = (call as unknown as BaseCallInternals).stream;
              if (stream && typeof stream.close === "function" && !stream.closed) stream.close(h2.NGHTTP2_NO_ERROR);
              return;
            }
            pass(metadata);
          },
        }),
    });
  };
}
