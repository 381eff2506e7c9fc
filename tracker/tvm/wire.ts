/**
 * TVM's tracker wire protocol, as the TVM port speaks it (docs/tvm-tracker.md,
 * "TVM's protocol" §1): the peer opens with the int32
 * tracker magic and gets it back; from then on both directions carry frames
 * of a little-endian int32 length and that many bytes of UTF-8 JSON. Every
 * request is a JSON array whose first element is a tracker code.
 *
 * Each frame is encoded into ONE buffer, so a reply leaves in one write (with
 * TCP_NODELAY on the socket): TVM's own tracker writes the length and the
 * JSON separately, and the second write waits for a delayed ACK (44 ms here).
 */
import { FarmError } from "../../protos/index.ts";

/** The tracker handshake (`RPC_TRACKER_MAGIC`). */
export const TRACKER_MAGIC = 0x2f271;
/** The RPC server handshake (`RPC_MAGIC`): the probe of a C++ TVM server's port opens with it (tracker/tvm/probe.ts). */
export const RPC_MAGIC = 0xff271;

export const TRACKER_CODES = {
  FAIL: -1,
  SUCCESS: 0,
  PING: 1,
  STOP: 2,
  PUT: 3,
  REQUEST: 4,
  UPDATE_INFO: 5,
  SUMMARY: 6,
  GET_PENDING_MATCHKEYS: 7,
} as const;

/**
 * The longest frame a peer may send: 4 KiB. TVM peers send no token, so this
 * is what the tracker reads from a caller it cannot authenticate. The largest
 * request TVM's clients and servers send is well under 1 KiB (UPDATE_INFO
 * `{"key": "server:K", "addr": [host, port]}`, or a PUT); with every name at
 * MAX_NAME_CHARS (256, connection.ts) a REQUEST or PUT is still about 1.1 KiB.
 * 4 KiB leaves that room four times over, and bounds what 4,096 connections
 * can make the tracker buffer to 16 MiB. (TVM's tracker allows 1 MiB since
 * #19586, unbounded before.)
 */
export const MAX_FRAME_BYTES = 4 * 1024;

/**
 * The deepest nesting of arrays and objects a frame may have. TVM's requests
 * nest three deep at most (`[5, {"addr": [null, 9090]}]`); 16 leaves any info
 * dict room, and keeps JSON.parse and JSON.stringify (which recurse, and
 * overflow the stack near a few thousand levels) far from their limit: a frame
 * of 6,000 `[` would otherwise end the process where its reply is written.
 */
export const MAX_JSON_DEPTH = 16;

/**
 * Whether UTF-8 JSON text nests arrays and objects deeper than `max`: one
 * linear scan of the brackets outside strings (a `[` inside `"..."`, or an
 * escaped quote, does not count), so it runs before anything recursive sees
 * the bytes. Unbalanced or otherwise bad JSON is left to JSON.parse.
 */
export function nestsDeeperThan(bytes: Uint8Array, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i]!;
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > max) return true;
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) {
      depth--;
    }
  }
  return false;
}

/** One int32, little-endian (the handshake, and the RPC probe's words). */
export function int32(n: number): Buffer {
  const b = Buffer.allocUnsafe(4);
  b.writeInt32LE(n, 0);
  return b;
}

/** One frame, length and JSON in one buffer: it goes out in one write. */
export function encodeFrame(value: unknown): Buffer {
  const json = Buffer.from(JSON.stringify(value), "utf8");
  const frame = Buffer.allocUnsafe(4 + json.length);
  frame.writeInt32LE(json.length, 0);
  json.copy(frame, 4);
  return frame;
}

/** What the reader found in the bytes pushed so far. */
export type WireEvent =
  | { type: "hello" }
  /** A frame whose bytes are intact: `value` is its JSON, or `error` says why it is not JSON (the next frame is still readable). */
  | { type: "frame"; value: unknown; error?: undefined }
  | { type: "frame"; value?: undefined; error: FarmError };

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Reads a peer's bytes: the handshake, then frames. A wrong magic, a
 * length that is not 1…MAX_FRAME_BYTES or a frame nested deeper than
 * MAX_JSON_DEPTH throws a PROTOCOL_ERROR: the byte stream cannot be followed
 * past the first two, and the third is an attack on the parser, not a request
 * — the connection must end. A frame that is not UTF-8 JSON is reported as
 * such and reading goes on.
 */
export class WireReader {
  private buffered: Buffer[] = [];
  private bufferedBytes = 0;
  private helloSeen = false;
  /** The announced length of the frame being read; 0: reading a length. */
  private want = 0;

  /** Bytes the peer sent that are not a whole frame yet. */
  get pendingBytes(): number {
    return this.bufferedBytes;
  }

  push(chunk: Buffer): WireEvent[] {
    this.buffered.push(chunk);
    this.bufferedBytes += chunk.length;
    const events: WireEvent[] = [];
    for (;;) {
      if (!this.helloSeen) {
        if (this.bufferedBytes < 4) return events;
        const magic = this.take(4).readInt32LE(0);
        if (magic !== TRACKER_MAGIC) {
          throw new FarmError(
            "PROTOCOL_ERROR",
            `the connection opened with 0x${(magic >>> 0).toString(16)} where TVM's tracker magic 0x${TRACKER_MAGIC.toString(16)} belongs: not a TVM tracker client or server`,
          );
        }
        this.helloSeen = true;
        events.push({ type: "hello" });
        continue;
      }
      if (this.want === 0) {
        if (this.bufferedBytes < 4) return events;
        const n = this.take(4).readInt32LE(0);
        if (n <= 0 || n > MAX_FRAME_BYTES) {
          throw new FarmError("PROTOCOL_ERROR", `a frame of ${n} bytes: the TVM port takes frames of 1 to ${MAX_FRAME_BYTES} bytes`);
        }
        this.want = n;
      }
      if (this.bufferedBytes < this.want) return events;
      const body = this.take(this.want);
      this.want = 0;
      if (nestsDeeperThan(body, MAX_JSON_DEPTH)) {
        throw new FarmError(
          "PROTOCOL_ERROR",
          `a frame of ${body.length} bytes nests arrays and objects more than ${MAX_JSON_DEPTH} deep: TVM's tracker requests nest 3 deep at most`,
        );
      }
      try {
        events.push({ type: "frame", value: JSON.parse(utf8.decode(body)) });
      } catch (err) {
        events.push({
          type: "frame",
          error: new FarmError(
            "INVALID_ARGUMENT",
            `a frame of ${body.length} bytes is not UTF-8 JSON (${(err as Error).message}): each request is a JSON array such as [1] (PING)`,
          ),
        });
      }
    }
  }

  private take(n: number): Buffer {
    const all = this.buffered.length === 1 ? this.buffered[0]! : Buffer.concat(this.buffered, this.bufferedBytes);
    const out = all.subarray(0, n);
    const rest = all.subarray(n);
    this.buffered = rest.length ? [rest] : [];
    this.bufferedBytes = rest.length;
    return out;
  }
}
