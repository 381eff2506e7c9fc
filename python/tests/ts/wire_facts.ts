/**
 * The TypeScript side's word on the wire, for python/tests/test_wire.py: the
 * frames it encodes (ends, a grant, a session request), the
 * seeded generator's output, and its decoding of what the Python side encoded:
 * HostFrames, and SessionRequests (prefixed `sr:`), given as hex lines on
 * stdin. One JSON object on stdout.
 *
 *   echo HOSTFRAME_HEX | node --import tsx python/tests/ts/wire_facts.ts
 */
import { readFileSync } from "node:fs";
import {
  CLEAN_END_FRAME, decodeHostFrame, decodeSessionRequest, encodeEndFrame, encodeGrantFrame, type Dtype,
} from "../../../protos/index.ts";
import { randomArray, type RandomFill } from "../../../domain/index.ts";

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
const RANDOM: Array<[Dtype, number, RandomFill]> = [
  ["float32", 1000, { seed: 7 }],
  ["float64", 100, { seed: 0xffffffff, low: -3.5, high: 10 }],
  ["int8", 1000, { seed: 9 }],
  ["uint8", 500, { seed: 1, low: 3, high: 200 }],
  ["int32", 200, { seed: 12345, low: -2_000_000_000, high: 2_000_000_000 }],
  ["int64", 100, { seed: 2, low: -(2 ** 40), high: 2 ** 40 }],
  ["uint16", 100, { seed: 4 }],
  ["float32", 300, { seed: 3, low: -5, high: 5, integers: true }],
];

const lines = readFileSync(0, "utf8").split("\n").filter((l) => l.trim());
/** A decoded chunk frame (upload, array_write) as plain JSON, its data as hex. */
function chunkFrame(bytes: Buffer): unknown {
  const f = decodeHostFrame(bytes);
  const op = f.op as "upload" | "array_write";
  const inner = f[op] as unknown as Record<string, unknown>;
  const fields = ["name", "total_bytes", "done", "sha256", "array", "offset"].filter((k) => k in inner).map((k) => [k, inner[k]]);
  return { id: f.id, op, [op]: { ...Object.fromEntries(fields), data: hex(inner.data as Uint8Array) } };
}

const decoded = lines.map((arg) => (arg.startsWith("sr:") ? decodeSessionRequest(Buffer.from(arg.slice(3), "hex")) : chunkFrame(Buffer.from(arg, "hex"))));

console.log(JSON.stringify({
  cleanEnd: hex(CLEAN_END_FRAME),
  errorEnd: hex(encodeEndFrame({ code: "RUNTIME_CRASH", message: "the worker died (SIGSEGV)", details_json: '{"signal":"SIGSEGV"}' })),
  grant: hex(encodeGrantFrame({ session_id: "s1-abc", route: "auto", ticket: "tkt", direct_address: "127.0.0.1:5", relay_port: 7, worker_address: "127.0.0.1:6", end_grace_ms: 1000 })),
  random: RANDOM.map(([dtype, n, fill]) => ({ dtype, n, fill, values: Array.from(randomArray(dtype, n, fill) as ArrayLike<number | bigint>, (v) => Number(v)) })),
  decoded,
}));
