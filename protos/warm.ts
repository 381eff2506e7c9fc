/**
 * Warming a fresh process's codecs. The first encode or decode of a message
 * type costs 0.1–1 ms: protobufjs generates a type's coder (and its
 * toObject/fromObject) on first use, for each nested type as it is reached,
 * and V8 compiles the codecs around them. A session worker is a fresh process
 * for every session, and its first messages (the assignment, the host's
 * hello, the welcome, the first frame and its answer) are on the grant's
 * critical path; so it runs every coder it will use once while it is idle,
 * before it says ready (device-agent/worker/main.ts).
 */
import type * as Protobuf from "protobufjs";
import { protobuf, root } from "./contract-root.ts";
import { decodeHostFrame, decodeLaneHello, encodeBoardFrame, encodeBoardFrameParts, encodeHostFrame, encodeLaneHello, encodeLaneWelcome } from "./frames.ts";
import { decodeToWorker, encodeToAgent, encodeToWorker } from "./worker-channel.ts";
import { warmBundleCodec } from "./bundle.ts";
import { SPLIT_MIN_BYTES } from "./gen/contract.ts";

/**
 * The steps that warm a session worker's codecs, each a fraction of a
 * millisecond: every message type the worker reads or writes (the agent's
 * messages, the lane's hello and welcome, the frames, and each type they
 * hold) encoded and decoded once by the coders protobufjs generates, then
 * the codecs around them with the enums they convert, then the module
 * bundle's. The worker runs one step per turn of its event loop while it is
 * idle and stops when a session comes (device-agent/worker/main.ts): a spare
 * worker is then ready as soon as before, and a session that comes before
 * the last step pays for the rest as it goes.
 */
export function workerCodecWarmups(): Array<() => void> {
  const types = new Set<Protobuf.Type>();
  const reach = (type: Protobuf.Type): void => {
    if (types.has(type)) return;
    types.add(type);
    for (const field of type.fieldsArray) if (field.resolve().resolvedType instanceof protobuf.Type) reach(field.resolvedType as Protobuf.Type);
  };
  for (const name of WORKER_MESSAGES) reach(root.lookupType(name));
  return [
    ...[...types].map((type) => () => warmType(type)),
    () => decodeToWorker(encodeToWorker({ assign: { session_id: "warm", token: "warm", dir: "/", route: "direct" } })),
    () => decodeToWorker(encodeToWorker({ lane: { session_id: "warm", kind: "direct", rest: new Uint8Array(0) } })),
    () => encodeToAgent({ lane_opened: { session_id: "warm", ticket: "" } }),
    () => decodeLaneHello(encodeLaneHello({ session_id: "warm", ticket: "warm", role: "host" })),
    () => encodeLaneWelcome({}),
    () => decodeHostFrame(encodeHostFrame({ id: 1, listdir: {} })),
    () => encodeBoardFrame({ id: 1, ok: {} }),
    () => encodeBoardFrameParts({ id: 1, data: { data: new Uint8Array(SPLIT_MIN_BYTES) } }),
    warmBundleCodec,
  ];
}

/** What a worker reads or writes: the agent's messages and its own, the lane's hello and welcome, the frames. */
export const WORKER_MESSAGES = [
  "farm.v1.AgentToWorker",
  "farm.v1.WorkerToAgent",
  "farm.v1.HostFrame",
  "farm.v1.BoardFrame",
  "farm.v1.LaneHello",
  "farm.v1.LaneWelcome",
];

/** One message of `type`, its own fields set (the types it holds are steps of their own), encoded and decoded. */
function warmType(type: Protobuf.Type): void {
  const sample: Record<string, unknown> = {};
  for (const field of type.fieldsArray) {
    if (field.resolvedType instanceof protobuf.Type) continue;
    const value = scalarSample(field);
    sample[field.name] = field instanceof protobuf.MapField ? { k: value } : field.repeated ? [value] : value;
  }
  type.decode(type.encode(sample).finish());
}

function scalarSample(field: Protobuf.Field): unknown {
  if (field.resolvedType instanceof protobuf.Enum) return Object.values(field.resolvedType.values)[0];
  if (field.type === "string") return "x";
  if (field.type === "bytes") return new Uint8Array(1);
  if (field.type === "bool") return true;
  return 1;
}
