/**
 * TVM clients at the agent's direct-lane port (docs/tvm-boards.md). A
 * client the tracker's TVM port granted a `tvm` board connects here as it
 * would to TVM's rpc_server: the RPC magic 0xFF271, an int32 length and
 * `client:<matchkey>[ -timeout=N]` (little-endian, TVM's
 * python/tvm/rpc/server.py `_accept_conn`). Its match key is
 * `<session id>:<ticket>`, the ticket of the session the tracker granted:
 * unguessable, opening one lane once and dying with the lease, as any
 * session's ticket (device-agent/common/tickets.ts).
 *
 * A kernelfarm host's first bytes are a frame's big-endian length, at most
 * MAX_MESSAGE_BYTES; TVM's magic read that way is 0x71F20F00, far beyond
 * it. So the first four bytes tell the two apart, and one port serves both.
 * As on the direct lane, the agent reads the handshake and nothing more: the
 * session's worker answers it (`server:<key>`) once the socket is in its
 * hands, and the client sends nothing before that answer.
 */
import type { Socket } from "node:net";
import { FarmError } from "../../protos/index.ts";
import { TICKET_SOURCE } from "../../runtime/index.ts";

/** TVM's RPC magic (python/tvm/rpc/base.py RPC_MAGIC); +1: the key is in use, +2: no server has it. */
export const TVM_RPC_MAGIC = 0xff271;
export const TVM_RPC_DUPLICATE = TVM_RPC_MAGIC + 1;
export const TVM_RPC_MISMATCH = TVM_RPC_MAGIC + 2;
/** A handshake key longer than this is no TVM client's (TVM's keys are short; the tracker caps match keys at 256 characters). */
export const MAX_TVM_KEY_BYTES = 4096;

/** A TVM client's handshake, as read: its bytes (which the worker re-reads) and the key they carry. */
export interface TvmHandshake {
  readonly bytes: Buffer;
  /** `client:<matchkey>[ -timeout=N]` */
  readonly key: string;
}

/**
 * Reads a connection's first bytes: a TVM client's whole handshake, or
 * undefined with what was read put back for the direct lane's reader
 * (a kernelfarm host). The socket is left paused either way. Throws when
 * the socket closes or `timeoutMs` passes first.
 */
export function sniffTvm(socket: Socket, timeoutMs: number): Promise<TvmHandshake | undefined> {
  return new Promise((resolve, reject) => {
    let read = Buffer.alloc(0);
    const done = (err: Error | undefined, value?: TvmHandshake) => {
      clearTimeout(timer);
      socket.off("data", onData);
      socket.off("close", onClose);
      socket.pause();
      if (err) reject(err);
      else resolve(value);
    };
    const onClose = () => done(new FarmError("CANCELLED", "the connection closed before its first bytes"));
    const onData = (chunk: Buffer) => {
      read = Buffer.concat([read, chunk]);
      if (read.length < 4) return;
      if (read.readInt32LE(0) !== TVM_RPC_MAGIC) {
        // A kernelfarm host: what was read goes back, first in line for the lane's reader.
        socket.pause();
        socket.unshift(read);
        done(undefined);
        return;
      }
      if (read.length < 8) return;
      const length = read.readInt32LE(4);
      if (length < 0 || length > MAX_TVM_KEY_BYTES) {
        done(new FarmError("PROTOCOL_ERROR", `a TVM handshake key of ${length} bytes (at most ${MAX_TVM_KEY_BYTES})`));
        return;
      }
      if (read.length < 8 + length) return;
      if (read.length > 8 + length) {
        done(new FarmError("PROTOCOL_ERROR", "bytes after the TVM handshake, before its answer: no TVM client sends them"));
        return;
      }
      done(undefined, { bytes: read, key: read.subarray(8).toString("utf8") });
    };
    const timer = setTimeout(() => done(new FarmError("DEADLINE_EXCEEDED", `nothing within ${timeoutMs} ms of connecting`)), timeoutMs);
    socket.on("data", onData);
    socket.once("close", onClose);
  });
}

/** What a TVM client's handshake key asks for: the session and its ticket, and TVM's `-timeout=` in seconds (0: none). */
export interface TvmClientKey {
  sessionId: string;
  ticket: string;
  timeoutS: number;
}

const CLIENT_KEY = new RegExp(`^client:([^:]+):(${TICKET_SOURCE})$`);

/** Parses `client:<session id>:<ticket>[ -timeout=N]`; PERMISSION_DENIED for any other key (TVM's MISMATCH). */
export function parseTvmClientKey(key: string): TvmClientKey {
  const [matchkey = "", ...opts] = key.split(" ").filter((w) => w !== "");
  // The ticket is a signed one's shape (runtime/session-tickets.ts); a TVM server's own match key (K:0.123…) is not.
  const m = CLIENT_KEY.exec(matchkey);
  if (!m) throw new FarmError("PERMISSION_DENIED", `the key ${JSON.stringify(matchkey.slice(0, 80))} is no match key this agent gave out`);
  let timeoutS = 0;
  for (const opt of opts) {
    if (!opt.startsWith("-timeout=")) continue;
    const t = Number(opt.slice("-timeout=".length));
    if (Number.isFinite(t) && t > 0) timeoutS = t;
  }
  return { sessionId: m[1]!, ticket: m[2]!, timeoutS };
}

/** Answers a TVM client it cannot serve, as TVM's server does (the client raises "cannot find server that matches key"), and closes. */
export function refuseTvm(socket: Socket, code: number = TVM_RPC_MISMATCH): void {
  if (socket.destroyed) return;
  const answer = Buffer.alloc(4);
  answer.writeInt32LE(code, 0);
  socket.end(answer);
  // A peer that never reads must not hold the socket open.
  setTimeout(() => socket.destroy(), 1000).unref();
}

/** Stops this process reading `socket` at all, before it is sent to a worker: what it read after would be lost there (runtime/lane.ts, detach). */
export function stopReading(socket: Socket): void {
  socket.pause();
  const handle = (socket as unknown as { _handle?: { readStop?: () => number; reading?: boolean } })._handle;
  if (handle?.readStop) {
    handle.readStop();
    handle.reading = false;
  }
}
