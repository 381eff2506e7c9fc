/**
 * The agent ↔ session worker channel's messages (worker.proto): their codec,
 * and the one validating decoder of what a worker says.
 *
 * A worker runs tenants' kernels in its own process, so its bytes are
 * untrusted: the decoder takes a frame of at most WORKER_MESSAGE_MAX_BYTES and
 * returns a message whose every field is in range, or throws a
 * PROTOCOL_ERROR naming what was wrong — never anything else. Whether a
 * well-formed message is in scope for the sending worker (its session, its
 * state) is the agent's to judge (device-agent/agent/pool.ts).
 */
import { root } from "./contract-root.ts";
import { FarmError, type WireError } from "./errors.ts";
import { MAX_TICKET_CHARS } from "./frames.ts";
import type { AgentToWorker as AgentToWorkerMessage, AgentToWorker__Output as AgentToWorkerMessage__Output } from "./gen/farm/v1/AgentToWorker.ts";
import type { WorkerAssign, WorkerAssign__Output } from "./gen/farm/v1/WorkerAssign.ts";
import type { WorkerLane, WorkerLane__Output } from "./gen/farm/v1/WorkerLane.ts";
import { LANE, ROUTE, toEncodable } from "./enums.ts";
import { LANES, type Lane, type Route } from "./routes.ts";
import type { WorkerToAgent, WorkerToAgent__Output } from "./gen/farm/v1/WorkerToAgent.ts";

const toWorkerType = root.lookupType("farm.v1.AgentToWorker");
const toAgentType = root.lookupType("farm.v1.WorkerToAgent");

/**
 * The largest message either side accepts. The largest legitimate one is an
 * ended session's error, whose message holds at most a crash's last output
 * (a few KiB); a lane's `rest` is at most a hello's worth of bytes.
 */
export const WORKER_MESSAGE_MAX_BYTES = 64 << 10;
/**
 * Requests to the agent (store, FPGA) a worker may have unanswered at once:
 * a session needs one at a time; the worker queues the rest, the agent kills
 * a worker that passes it.
 */
export const WORKER_MAX_PENDING_REQUESTS = 4;
/** Longest session id, ticket, route or digest a worker may name. */
const MAX_ID_CHARS = 256;
/** A file name in a session's folder: Linux's NAME_MAX, in bytes. */
const MAX_NAME_BYTES = 255;
/** A canary's detail or an error's message: what fits is plenty for a person to read. */
const MAX_TEXT_CHARS = 16 << 10;
/** Digests the content store knows: SHA-256 of the bytes, or their tree digest (domain/tree-digest.ts). */
const DIGEST = /^(tree-)?[0-9a-f]{64}$/;

export type { WorkerToAgent };
/** What the agent says, with an assignment's route and a lane's kind by name ("grpc"): the codecs convert the Route and Lane enums (protos/enums.ts). */
export type AgentToWorker = Omit<AgentToWorkerMessage, "assign" | "lane"> & {
  assign?: (Omit<WorkerAssign, "route"> & { route?: Route }) | null;
  lane?: (Omit<WorkerLane, "kind"> & { kind: WorkerLaneKind }) | null;
};
export type AgentToWorker__Output = Omit<AgentToWorkerMessage__Output, "assign" | "lane"> & {
  assign?: (Omit<WorkerAssign__Output, "route"> & { route: Route }) | null;
  lane?: (Omit<WorkerLane__Output, "kind"> & { kind: WorkerLaneKind }) | null;
};
/** A worker's lane: one of LANES, or a TVM client's socket on a tvm board (device-agent/worker/tvm-session.ts). */
export type WorkerLaneKind = Lane | "tvm";
const WORKER_LANE_KINDS: readonly string[] = [...LANES, "tvm"];

type Bodies = { [K in NonNullable<WorkerToAgent__Output["msg"]>]-?: NonNullable<WorkerToAgent__Output[K]> };
/** A decoded, validated message from a worker: `kind` names it, `m` holds its fields. */
export type WorkerMessage = { [K in keyof Bodies]: { kind: K; m: Bodies[K] } }[keyof Bodies];

export function encodeToWorker(msg: AgentToWorker): Uint8Array {
  return toWorkerType.encode(msg.assign || msg.lane ? toEncodable("farm.v1.AgentToWorker", msg) : msg).finish();
}

/** The worker's side: the agent is trusted, but a frame it cannot read is still a clear error. */
export function decodeToWorker(bytes: Uint8Array): AgentToWorker__Output {
  let msg: AgentToWorkerMessage__Output;
  try {
    msg = toWorkerType.decode(bytes) as unknown as AgentToWorkerMessage__Output;
  } catch (err) {
    throw new FarmError("PROTOCOL_ERROR", `the agent sent a message that does not decode: ${(err as Error).message}`);
  }
  if (!msg.msg) throw new FarmError("PROTOCOL_ERROR", "the agent sent a message of no known kind");
  // A decoded instance keeps its defaults on its prototype: the route is replaced in place, not copied out.
  if (msg.assign) (msg.assign as { route: unknown }).route = ROUTE.fromWire(msg.assign.route, "the agent's assignment", "PROTOCOL_ERROR");
  if (msg.lane) {
    // A worker's lane is one of LANES, or a TVM client's socket (a tvm board); LANE_NONE (unset) names none.
    const kind = LANE.fromWire(msg.lane.kind, "the agent's lane", "PROTOCOL_ERROR");
    if (!WORKER_LANE_KINDS.includes(kind))
      throw new FarmError("PROTOCOL_ERROR", `the agent's lane: its kind must be one of ${WORKER_LANE_KINDS.join(", ")}, got ${JSON.stringify(kind)}`);
    (msg.lane as { kind: unknown }).kind = kind;
  }
  return msg as unknown as AgentToWorker__Output;
}

export function encodeToAgent(msg: WorkerToAgent): Uint8Array {
  return toAgentType.encode(msg).finish();
}

/** Decodes and checks one frame a worker sent: a WorkerMessage, or a PROTOCOL_ERROR saying what was wrong. */
export function decodeToAgent(bytes: Uint8Array): WorkerMessage {
  if (bytes.byteLength > WORKER_MESSAGE_MAX_BYTES) throw violation(`a message of ${bytes.byteLength} bytes (the limit is ${WORKER_MESSAGE_MAX_BYTES})`);
  let msg: WorkerToAgent__Output;
  try {
    msg = toAgentType.decode(bytes) as unknown as WorkerToAgent__Output;
  } catch (err) {
    // Anything protobufjs throws, a stack overflow on nested groups included: it is all the sender's fault.
    throw violation(`a message that does not decode (${(err as Error).message})`);
  }
  const kind = msg.msg;
  if (!kind) throw violation("a message of no known kind");
  const m = msg[kind];
  if (!m) throw violation(`an empty ${kind} message`);
  CHECKS[kind](m as never);
  return { kind, m } as WorkerMessage;
}

/** The error of a worker that broke the channel's contract (`what` it did): its session ends with it. */
export function workerProtocolError(what: string): FarmError {
  return new FarmError("PROTOCOL_ERROR", `the session's worker broke the agent's protocol: ${what}`);
}

const violation = workerProtocolError;

function text(field: string, value: string, max = MAX_ID_CHARS): void {
  if (value.length > max) throw violation(`${field} is ${value.length} characters long (at most ${max})`);
}

function id(field: string, value: string): void {
  text(field, value);
  if (value === "") throw violation(`${field} is empty`);
}

/** A plain file name: no path, no NUL, not "." or "..", within NAME_MAX bytes. */
function plainName(field: string, value: string): void {
  if (!/^[^/\0]+$/.test(value) || value === "." || value === "..") throw violation(`${field} ${JSON.stringify(value.slice(0, 80))} is not a plain file name`);
  if (Buffer.byteLength(value) > MAX_NAME_BYTES) throw violation(`${field} is ${Buffer.byteLength(value)} bytes long (at most ${MAX_NAME_BYTES})`);
}

function count(field: string, value: number, max = Number.MAX_SAFE_INTEGER): void {
  if (!Number.isFinite(value) || value < 0 || value > max) throw violation(`${field} is ${value} (a number from 0 to ${max})`);
}

/** A byte count: a whole number from 0 on (a double on the wire, exact up to 2^53). */
function byteCount(field: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) throw violation(`${field} ${value} is not a byte count (a whole number from 0 to ${Number.MAX_SAFE_INTEGER})`);
}

function wireError(field: string, e: WireError | null | undefined): void {
  if (!e) return;
  if (!FarmError.isCode(e.code)) throw violation(`${field} has the unknown code ${JSON.stringify(e.code.slice(0, 40))}`);
  text(`${field}'s message`, e.message, MAX_TEXT_CHARS);
  text(`${field}'s details`, e.details_json ?? "", MAX_TEXT_CHARS);
}

const CHECKS: { [K in keyof Bodies]: (m: Bodies[K]) => void } = {
  ready: () => {},
  lane_opened: (m) => {
    id("lane_opened's session id", m.session_id);
    text("lane_opened's ticket", m.ticket, MAX_TICKET_CHARS);
  },
  canary: (m) => {
    text("the canary's detail", m.detail, MAX_TEXT_CHARS);
    count("the canary's duration_ms", m.duration_ms);
    count("the canary's kernel_ns", m.kernel_ns);
  },
  foreign_code: (m) => id("foreign_code's session id", m.session_id),
  counters: (m) => {
    for (const [code, n] of Object.entries(m.errors)) {
      if (!FarmError.isCode(code)) throw violation(`counters name the unknown error code ${JSON.stringify(code.slice(0, 40))}`);
      count(`counters' ${code}`, n);
    }
  },
  store_keep: (m) => {
    plainName("store_keep's name", m.name);
    if (!DIGEST.test(m.sha256)) throw violation("store_keep's digest is not a SHA-256 (64 lowercase hex digits, or tree- and those)");
  },
  store_take: (m) => {
    if (!DIGEST.test(m.sha256)) throw violation("store_take's digest is not a SHA-256 (64 lowercase hex digits, or tree- and those)");
    if (!Number.isSafeInteger(m.size) || m.size < 0) throw violation(`store_take's size ${m.size} is not a byte count`);
  },
  program_fpga: (m) => {
    plainName("program_fpga's bitstream", m.bitstream);
    plainName("program_fpga's config", m.config);
  },
  output_read: (m) => count("output_read's from", m.from),
  lane_bytes: (m) => {
    id("lane_bytes' session id", m.session_id);
    byteCount("lane_bytes' to_board", m.to_board);
    byteCount("lane_bytes' from_board", m.from_board);
  },
  ended: (m) => {
    id("ended's session id", m.session_id);
    wireError("ended's error", m.error);
  },
};
