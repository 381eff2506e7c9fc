/**
 * Encode and decode the session protocol's frames (session.proto).
 *
 * The host SDK and the session worker are the only two places that ever look
 * inside a frame; the tracker relays the encoded bytes untouched.
 */
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import type { HostFrame, HostFrame__Output } from "./gen/farm/v1/HostFrame.ts";
import type { BoardFrame, BoardFrame__Output } from "./gen/farm/v1/BoardFrame.ts";

const require = createRequire(import.meta.url);
const protobuf = require("protobufjs") as typeof import("protobufjs");

// 64-bit integers decode as JS numbers: frame fields that are 64-bit hold
// kernel scalar arguments, and sizes are doubles (exact to 2^53).
protobuf.util.Long = undefined as never;
protobuf.configure();

const root = new protobuf.Root();
root.resolvePath = (_origin, target) =>
  target.startsWith("farm/") ? fileURLToPath(new URL(target, import.meta.url)) : target;
root.loadSync("farm/v1/session.proto", { keepCase: true });
const hostFrameType = root.lookupType("farm.v1.HostFrame");
const boardFrameType = root.lookupType("farm.v1.BoardFrame");

export type { HostFrame, HostFrame__Output, BoardFrame, BoardFrame__Output };

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
