/**
 * Fuzz: the first bytes of a lane (runtime/lane.ts — 4-byte length, then a
 * LaneHello) against a real agent's direct-lane port and the tracker's data
 * port (relay): random bytes, frames cut short, huge length prefixes, and
 * valid-looking hellos with bad tickets (for an open session's id too),
 * roles and tokens, with garbage after them. Every connection is refused
 * (a typed LaneWelcome error naming the problem, or closed), neither
 * process dies, the open session is not disturbed, and the farm serves a
 * normal session on each lane afterwards.
 */
import assert from "node:assert/strict";
import { connect } from "node:net";
import { after, before, describe, it } from "node:test";
import fc from "fast-check";
import { connectTracker, type Session, type TrackerClient } from "../../host-sdk/index.ts";
import { decodeLaneWelcome, encodeLaneHello, FarmError } from "../../protos/index.ts";
import { framed } from "../../runtime/index.ts";
import { fuzz, receiveUntil } from "../helpers/fuzz.ts";
import { checkVadd } from "../helpers/kernels.ts";
import { startAgentProcess, startTrackerProcess, waitFor, waitForFreeBoards, type AgentProcess, type TrackerProcess } from "../helpers/processes.ts";

/** `n` as a protobuf varint. */
function varint(n: number): Buffer {
  const bytes: number[] = [];
  for (; n >= 0x80; n = Math.floor(n / 0x80)) bytes.push((n % 0x80) | 0x80);
  bytes.push(n);
  return Buffer.from(bytes);
}

/** What a lane's first bytes can be. `sessionId`: an open session's, for hellos that name it with a bad ticket. */
function laneInput(sessionId: string): fc.Arbitrary<Buffer> {
  const hello = fc
    .record({
      session_id: fc.oneof(fc.constant(sessionId), fc.string({ maxLength: 40 }), fc.stringMatching(/^s\d{1,3}-[0-9a-f]{6}$/)),
      ticket: fc.oneof(fc.stringMatching(/^[0-9a-f]{32}$/), fc.string({ maxLength: 64 }), fc.constant("")),
      // A role by name, or any number as the LaneRole field: 0 (none) and values the enum lacks among them.
      role: fc.oneof(fc.constantFrom("host" as const, "worker" as const), fc.nat({ max: 0xffffffff })),
      token: fc.option(fc.oneof(fc.string({ maxLength: 80 }), fc.stringMatching(/^kf1\.[0-9a-f]{12}\.[A-Za-z0-9_-]{43}$/)), { nil: undefined }),
    })
    .map(({ role, ...h }) => {
      const hello = { session_id: h.session_id, ticket: h.ticket, token: h.token ?? "" };
      if (typeof role === "string") return Buffer.from(encodeLaneHello({ ...hello, role }));
      // The role field (5) again, as a varint: a decoder keeps a scalar field's last value.
      return Buffer.concat([encodeLaneHello({ ...hello, role: "host" }), Buffer.from([5 << 3]), varint(role)]);
    });
  const header = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n >>> 0, 0);
    return b;
  };
  return fc.oneof(
    // Random bytes.
    fc.uint8Array({ maxLength: 512 }).map((b) => Buffer.from(b)),
    // A hello, framed, then maybe garbage (frames that would follow a welcome).
    fc.tuple(hello, fc.uint8Array({ maxLength: 256 })).map(([h, rest]) => Buffer.concat([framed(h), rest])),
    // A hello cut short, its length prefix included.
    fc.tuple(hello, fc.nat()).map(([h, at]) => framed(h).subarray(0, at % (h.length + 4))),
    // A frame of random bytes (not a hello).
    fc.uint8Array({ maxLength: 300 }).map((b) => framed(b)),
    // A length prefix far past any hello (or any frame), then a little.
    fc
      .tuple(
        fc.oneof(fc.constantFrom(0xffffffff, 0x80000000, 4097, 4096, 64 << 20), fc.integer({ min: 4097, max: 0xffffffff })),
        fc.uint8Array({ maxLength: 64 }),
      )
      .map(([n, rest]) => Buffer.concat([header(n), rest])),
    // An empty frame.
    fc.constant(header(0)),
  );
}

/** Writes `bytes` to host:port and ends; resolves with what came back once the other side closed. */
async function poke(host: string, port: number, bytes: Buffer): Promise<Buffer> {
  const socket = connect({ host, port });
  socket.on("connect", () => socket.end(bytes));
  // The port answers a hello at once, and closes on end: 5 s is the hello timeout, only silence reaches it.
  const { received } = await receiveUntil(socket, 7000, () => `no close within 7 s after ${bytes.length} bytes ${bytes.subarray(0, 64).toString("hex")}`);
  return received;
}

/** The refusal a lane's port answered with, or undefined when it only closed. */
function refusal(answer: Buffer): { code: string; message: string } | undefined {
  if (answer.length === 0) return undefined;
  assert.ok(answer.length >= 4, `a partial answer: ${answer.toString("hex")}`);
  const length = answer.readUInt32BE(0);
  assert.ok(answer.length >= 4 + length, `an answer cut short: ${answer.toString("hex")}`);
  const w = decodeLaneWelcome(answer.subarray(4, 4 + length));
  assert.ok(w.error, "a lane was welcomed with no valid ticket");
  return { code: w.error.code, message: w.error.message };
}

describe("fuzz: lane hellos and frames", () => {
  let tracker: TrackerProcess;
  let agent: AgentProcess;
  let client: TrackerClient;
  let directPort: number;
  let open: Session;

  before(async () => {
    tracker = await startTrackerProcess();
    agent = await startAgentProcess(tracker.address, ["cpu:key=cpu"], ["--warm-workers", "2"], { env: { KFARM_LOG: "info" } });
    client = await connectTracker(tracker.address);
    await waitForFreeBoards(client, 1);
    directPort = await waitFor("the direct lane's port in the agent's log", () => {
      const line = agent
        .stderr()
        .split("\n")
        .find((l) => l.includes('"direct lane listening"'));
      return line ? (JSON.parse(line) as { port: number }).port : undefined;
    });
    open = await client.request("cpu", { deadlineMs: 10_000, route: "direct" });
  });
  after(async () => {
    await open?.close();
    client?.close();
    await agent?.stop();
    await tracker?.stop();
  });

  /** Every input to `port`: refused with a typed error naming the problem, or closed; both processes alive. */
  async function fuzzPort(name: string, port: () => number, runs: number, seconds: number): Promise<void> {
    const seen = new Set<string>();
    await fuzz(name, { runs, seconds }, laneInput(open.id), async (bytes) => {
      const r = refusal(await poke("127.0.0.1", port(), bytes));
      if (r) {
        assert.ok(
          FarmError.isCode(r.code) && ["PROTOCOL_ERROR", "PERMISSION_DENIED", "NOT_FOUND", "UNAUTHENTICATED", "TIMEOUT"].includes(r.code),
          `refused with ${r.code}: ${r.message}`,
        );
        assert.ok(r.message.length > 10, `the refusal names no problem: ${r.code} ${JSON.stringify(r.message)}`);
        seen.add(r.code);
      }
      assert.equal(tracker.proc.exitCode, null, `the tracker died:\n${tracker.stderr().slice(-2000)}`);
      assert.equal(agent.proc.exitCode, null, `the agent died:\n${agent.stderr().slice(-2000)}`);
    });
    console.log(`fuzz ${name}: refusals ${[...seen].sort().join(", ") || "none"}`);
  }

  it("the agent's direct-lane port refuses what is not a hello with a valid ticket", async () => {
    await fuzzPort("lane hello (agent direct port)", () => directPort, 1500, 5);
  });

  it("the tracker's data port (relay) refuses the same", async () => {
    await fuzzPort("lane hello (tracker data port)", () => tracker.dataPort, 1500, 5);
  });

  it("the open session was not disturbed, and new sessions are served on every lane", async () => {
    await checkVadd(open);
    // The board is free again for the next sessions.
    await open.close();
    for (const route of ["direct", "relay", "grpc"] as const) {
      const s = await client.request("cpu", { deadlineMs: 10_000, route });
      try {
        assert.equal(s.lane, route);
        await checkVadd(s);
      } finally {
        await s.close();
      }
    }
  });
});
