/**
 * Encode and decode the session protocol's frames (session.proto).
 *
 * The host SDK and the session worker are the only two places that ever look
 * inside a frame; the tracker relays the encoded bytes untouched.
 */
import type * as Protobuf from "protobufjs";
import { protobuf, root } from "./contract-root.ts";
import type { HostFrame, HostFrame__Output } from "./gen/farm/v1/HostFrame.ts";
import type { BoardFrame, BoardFrame__Output } from "./gen/farm/v1/BoardFrame.ts";
import type { WireError } from "./errors.ts";
import type { Grant as GrantMessage, Grant__Output as GrantMessage__Output } from "./gen/farm/v1/Grant.ts";
import type { LaneHello as LaneHelloMessage, LaneHello__Output as LaneHelloMessage__Output } from "./gen/farm/v1/LaneHello.ts";
import type { LaneWelcome, LaneWelcome__Output } from "./gen/farm/v1/LaneWelcome.ts";
import type { SessionTicket__Output as SessionTicketMessage } from "./gen/farm/v1/SessionTicket.ts";
import type { SessionRequest as SessionRequestMessage, SessionRequest__Output as SessionRequestMessage__Output } from "./gen/farm/v1/SessionRequest.ts";
import { fromWireMessage, toEncodable, type LaneRoleName } from "./enums.ts";
// Below SPLIT_MIN_BYTES of data one buffer is cheaper than two writes (declared for both SDKs).
import { SPLIT_MIN_BYTES } from "./gen/contract.ts";
import type { BoardInfo, BoardInfo__Output } from "./summary-reply.ts";
import type { Route } from "./routes.ts";

const hostFrameType = root.lookupType("farm.v1.HostFrame");
const boardFrameType = root.lookupType("farm.v1.BoardFrame");
const sessionRequestType = root.lookupType("farm.v1.SessionRequest");
const laneHelloType = root.lookupType("farm.v1.LaneHello");
const laneWelcomeType = root.lookupType("farm.v1.LaneWelcome");
const sessionTicketType = root.lookupType("farm.v1.SessionTicket");

export type { HostFrame, HostFrame__Output, BoardFrame, BoardFrame__Output };

/** A grant with its enums by name (route "direct", its board's state "busy"): the codecs below convert them (protos/enums.ts). */
export type Grant = Omit<GrantMessage, "route" | "board"> & { route?: Route; board?: BoardInfo | null };
export type Grant__Output = Omit<GrantMessage__Output, "route" | "board"> & { route: Route; board: BoardInfo__Output | null };
/** A session request with its route by name (absent: auto). */
export type SessionRequest = Omit<SessionRequestMessage, "route"> & { route?: Route };
export type SessionRequest__Output = Omit<SessionRequestMessage__Output, "route"> & { route: Route };

export function encodeHostFrame(frame: HostFrame): Uint8Array {
  return hostFrameType.encode(frame).finish();
}

/** Decoded messages are protobufjs instances: defaults live on the prototype and
 * the oneof name (`op`, `result`) is a getter, so fields read like `__Output`. */
export function decodeHostFrame(bytes: Uint8Array): HostFrame__Output {
  return hostFrameType.decode(bytes) as unknown as HostFrame__Output;
}

export function encodeBoardFrame(frame: BoardFrame): Uint8Array {
  return boardFrameType.encode(frame).finish();
}

export function decodeBoardFrame(bytes: Uint8Array): BoardFrame__Output {
  return boardFrameType.decode(bytes) as unknown as BoardFrame__Output;
}

// --- chunk frames without a copy of their data

/** The chunked requests, by their HostFrame field number; each one's `data` is its field 3. */
const CHUNK_OPS = {
  upload: { field: 2, type: root.lookupType("farm.v1.Upload") },
  array_write: { field: 8, type: root.lookupType("farm.v1.ArrayWrite") },
} as const;
const dataType = root.lookupType("farm.v1.Data");

/** `head`, then `data` as its field 1 (Data) or 3 (Upload, ArrayWrite), as field `field` of a frame with `id`. */
function splitParts(id: number, field: number, innerHead: Uint8Array, dataField: number, data: Uint8Array): Uint8Array[] {
  const dataTag = protobuf.Writer.create()
    .uint32((dataField << 3) | 2)
    .uint32(data.byteLength)
    .finish();
  const head = protobuf.Writer.create();
  if (id) head.uint32((1 << 3) | 0).uint32(id);
  head.uint32((field << 3) | 2).uint32(innerHead.length + dataTag.length + data.byteLength);
  return [Buffer.concat([head.finish(), innerHead, dataTag]), data];
}

/**
 * A HostFrame as parts whose concatenation is its encoding: for an upload or
 * array-write chunk, the encoded head and then the chunk's bytes themselves,
 * so a megabyte goes to the socket without being copied into a protobuf
 * buffer. (Protobuf reads fields in any order: `data` goes last.)
 */
export function encodeHostFrameParts(frame: HostFrame): Uint8Array[] {
  const op = frame.upload ? "upload" : frame.array_write ? "array_write" : undefined;
  const inner = op ? (frame[op] as { data?: Uint8Array }) : undefined;
  const data = inner?.data;
  if (!op || !data || data.byteLength < SPLIT_MIN_BYTES) return [encodeHostFrame(frame)];
  const { data: _, ...rest } = inner!;
  return splitParts(frame.id ?? 0, CHUNK_OPS[op].field, CHUNK_OPS[op].type.encode(rest).finish(), 3, data);
}

/** The same for a BoardFrame: a `data` reply (download, array read) as its head and its bytes. */
export function encodeBoardFrameParts(frame: BoardFrame): Uint8Array[] {
  const data = frame.data?.data;
  // The generated type allows a base64 string; the worker only ever sends bytes.
  if (typeof data === "string") return [encodeBoardFrame(frame)];
  if (!data || data.byteLength < SPLIT_MIN_BYTES) return [encodeBoardFrame(frame)];
  const { data: _, ...rest } = frame.data!;
  return splitParts(frame.id ?? 0, 4, dataType.encode(rest).finish(), 1, data);
}

// --- frames recognised by their first byte

/**
 * A BoardFrame with `grant` (field 12) or `end` (field 13) and no request id
 * starts with that field's tag; every reply starts with its id's tag (field
 * 1), or, for id 0, with `error`'s (field 2). So a relay or a lane can pick
 * out a session's first and last frames without decoding the others.
 */
const GRANT_TAG = (12 << 3) | 2;
const END_TAG = (13 << 3) | 2;

export function isGrantFrame(bytes: Uint8Array): boolean {
  return bytes[0] === GRANT_TAG;
}

export function isEndFrame(bytes: Uint8Array): boolean {
  return bytes[0] === END_TAG;
}

// No `id` at all: protobufjs writes a field that is present even when it is 0, and the tag must come first.
export function encodeGrantFrame(grant: Grant): Uint8Array {
  return boardFrameType.encode({ grant: toEncodable<GrantMessage>("farm.v1.Grant", grant) }).finish();
}

/** A session's last frame: `reason` null is a clean close. */
export function encodeEndFrame(reason: WireError | null): Uint8Array {
  return encodeBoardFrame({ end: reason ? { reason } : {} });
}

/** The clean end, as the worker sends it: the tracker compares bytes, it does not decode. */
export const CLEAN_END_FRAME: Uint8Array = encodeEndFrame(null);

/** The grant a frame carries; a route or board state this SDK does not know is a PROTOCOL_ERROR. */
export function decodeGrantFrame(bytes: Uint8Array): Grant__Output {
  const f = boardFrameType.decode(bytes) as unknown as BoardFrame__Output;
  if (!f.grant) throw new Error("not a grant frame");
  const grant = boardFrameType.toObject(f as unknown as Protobuf.Message, { defaults: true, enums: String }).grant as object;
  return fromWireMessage<Grant__Output>("farm.v1.Grant", grant, "the tracker's grant", "PROTOCOL_ERROR");
}

/** The end a frame carries: null for a clean close. */
export function decodeEndFrame(bytes: Uint8Array): WireError | null {
  const f = decodeBoardFrame(bytes);
  if (!f.end) throw new Error("not an end frame");
  return f.end.reason ?? null;
}

// --- the session request (metadata of HostService.Session) and the lane handshake

export function encodeSessionRequest(req: SessionRequest): Uint8Array {
  return sessionRequestType.encode(toEncodable("farm.v1.SessionRequest", req)).finish();
}

/** Throws what protobufjs throws for bytes that do not decode, and an INVALID_ARGUMENT FarmError for a route it does not know. */
export function decodeSessionRequest(bytes: Uint8Array): SessionRequest__Output {
  const req = sessionRequestType.toObject(sessionRequestType.decode(bytes), { defaults: true, enums: String });
  return fromWireMessage<SessionRequest__Output>("farm.v1.SessionRequest", req, "the session request");
}

/** A lane's hello with its role by name ("host"): the codec converts the LaneRole enum (protos/enums.ts). */
export type LaneHello = Omit<LaneHelloMessage, "role"> & { role: LaneRoleName };
/** A decoded hello: its role is "" where it named none, which the accepting side refuses (runtime/lane.ts). */
export type LaneHello__Output = Omit<LaneHelloMessage__Output, "role"> & { role: LaneRoleName | "" };

export function encodeLaneHello(hello: LaneHello): Uint8Array {
  return laneHelloType.encode(toEncodable("farm.v1.LaneHello", hello)).finish();
}

/**
 * Any peer's first bytes on a lane: throws what protobufjs throws for bytes
 * that do not decode, and a PROTOCOL_ERROR FarmError for a role the enum
 * does not have (a newer or malformed peer's).
 */
export function decodeLaneHello(bytes: Uint8Array): LaneHello__Output {
  const hello = laneHelloType.toObject(laneHelloType.decode(bytes), { defaults: true, enums: String });
  return fromWireMessage<LaneHello__Output>("farm.v1.LaneHello", hello, "the lane hello", "PROTOCOL_ERROR");
}

/** Longer than any ticket the tracker signs (its ids are bounded): a ticket past this is no ticket. */
export const MAX_TICKET_CHARS = 1024;

/** What a session's ticket says (its route by name): signed and checked by runtime/session-tickets.ts. */
export type SessionTicketFields = Omit<SessionTicketMessage, "route"> & { route: Route };

export function encodeSessionTicket(ticket: SessionTicketFields): Uint8Array {
  return sessionTicketType.encode(toEncodable("farm.v1.SessionTicket", ticket)).finish();
}

/** Throws what protobufjs throws for bytes that do not decode, and a FarmError for a route the enum lacks. */
export function decodeSessionTicket(bytes: Uint8Array): SessionTicketFields {
  const t = sessionTicketType.toObject(sessionTicketType.decode(bytes), { defaults: true, enums: String });
  return fromWireMessage<SessionTicketFields>("farm.v1.SessionTicket", t, "the session ticket", "PERMISSION_DENIED");
}

export function encodeLaneWelcome(welcome: LaneWelcome): Uint8Array {
  return laneWelcomeType.encode(welcome).finish();
}

export function decodeLaneWelcome(bytes: Uint8Array): LaneWelcome__Output {
  return laneWelcomeType.decode(bytes) as unknown as LaneWelcome__Output;
}
