/**
 * The Summary reply (host.proto) encoded from parts: the reply without its
 * boards, then each board's BoardInfo already encoded. A tracker keeps each
 * board's bytes until the board changes (tracker/summary.ts) rather than
 * encoding every BoardInfo, label maps and all, on every call: with 10,000
 * boards that was ~0.2 s of the tracker's one thread per Summary
 * (BENCHMARKS.md §18). The bytes are the message a plain encoding gives,
 * with the boards last: protobuf readers take fields in any order, and the
 * elements of a repeated field in the order they come.
 *
 * The tracker hands the bytes to grpc-js as its reply, and HostService's
 * Summary serializer passes a Buffer as it is (protos/grpc.ts).
 */
import { protobuf, root } from "./contract-root.ts";
import type { BoardInfo as BoardInfoMessage, BoardInfo__Output as BoardInfoMessage__Output } from "./gen/farm/v1/BoardInfo.ts";
import type { SummaryReply as SummaryReplyMessage, SummaryReply__Output as SummaryReplyMessage__Output } from "./gen/farm/v1/SummaryReply.ts";
import type { HealthChange as HealthChangeMessage, HealthChange__Output as HealthChangeMessage__Output } from "./gen/farm/v1/HealthChange.ts";
import { toEncodable, type BOARD_KIND, type BoardHealthName, type BoardStateName, type SessionLane } from "./enums.ts";

/** "" where unset (as no BoardInfo the tracker sends has it). */
type Kind = ReturnType<typeof BOARD_KIND.fromWire>;
/** A board as every part handles it: its kind, state and session lane by name ("cpu", "free", "direct"); protos/enums.ts converts the enums at the wire. */
/** "local": a local session's board (local-session.ts), which never travels. */
export type BoardInfo = Omit<BoardInfoMessage, "kind" | "state" | "session_lane" | "health" | "health_history"> & {
  kind?: Kind;
  state?: BoardStateName;
  session_lane?: SessionLane | "local";
  health?: BoardHealthName;
  health_history?: HealthChange[];
};
export type BoardInfo__Output = Omit<BoardInfoMessage__Output, "kind" | "state" | "session_lane" | "health" | "health_history"> & {
  kind: Kind;
  state: BoardStateName;
  session_lane: SessionLane | "local";
  health: BoardHealthName;
  health_history: HealthChange__Output[];
};
/** One move of a board's health, its ends by name ("suspect"). */
export type HealthChange = Omit<HealthChangeMessage, "from" | "to"> & { from?: BoardHealthName; to?: BoardHealthName };
export type HealthChange__Output = Omit<HealthChangeMessage__Output, "from" | "to"> & { from: BoardHealthName; to: BoardHealthName };
/** A Summary reply with its boards as above. */
export type SummaryReply = Omit<SummaryReplyMessage, "boards"> & { boards?: BoardInfo[] };
export type SummaryReply__Output = Omit<SummaryReplyMessage__Output, "boards"> & { boards: BoardInfo__Output[] };

const boardInfoType = root.lookupType("farm.v1.BoardInfo");
const summaryReplyType = root.lookupType("farm.v1.SummaryReply");
/** SummaryReply.boards: field 2, length-delimited. */
const BOARDS_TAG = (2 << 3) | 2;

/**
 * One board's entry of a Summary reply: its BoardInfo as grpc-js's serializer
 * would encode it, framed as the reply's field `boards` (tag and length), so
 * that a reply is its head and these, end to end.
 */
export function encodeBoardEntry(info: BoardInfo): Uint8Array {
  return protobuf.Writer.create()
    .uint32(BOARDS_TAG)
    .bytes(boardInfoType.encode(toEncodable<BoardInfoMessage>("farm.v1.BoardInfo", info)).finish())
    .finish();
}

/**
 * A Summary reply whose boards are given as entries (encodeBoardEntry), in
 * the order the reply lists them; `head`'s own `boards` must be empty. The
 * result is what the tracker passes to the Summary call's callback (typed as
 * the reply it encodes, for grpc-js's handler type).
 */
export function encodeSummaryReply(head: SummaryReply, boards: readonly Uint8Array[]): SummaryReplyMessage {
  if (head.boards?.length) throw new Error("encodeSummaryReply: the head carries no boards; they are given encoded");
  return Buffer.concat([summaryReplyType.encode(summaryReplyType.fromObject(head)).finish(), ...boards]) as unknown as SummaryReplyMessage;
}
