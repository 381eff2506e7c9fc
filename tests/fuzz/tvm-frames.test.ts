/**
 * Fuzz: TVM tracker frames against a real tracker's TVM port (tracker/tvm/),
 * bounded by a time budget and a run count. Each run opens a fresh
 * connection and sends what fast-check makes of it: the magic (or another
 * word), then frames — JSON requests with any code and arguments, nesting
 * thousands deep (the 12 KB `[`×6000 `]`×6000 crash of issue 27 among them),
 * bytes that are not JSON or not UTF-8, length headers that are negative,
 * zero or huge, and a last frame cut short. The property: the tracker
 * process lives, and the connection is answered (one reply per whole frame;
 * a REQUEST, which waits for a server, at the tracker's cap) or closed; a connection left mid-frame is closed once the peer ends it.
 * Afterwards the farm still serves: a TVM server registers and a TVM client
 * is granted it, and a kernelfarm session runs.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { connect } from "node:net";
import { after, before, describe, it } from "node:test";
import fc from "fast-check";
import { fuzz, receiveUntil } from "../helpers/fuzz.ts";
import { connectTracker, type TrackerClient } from "../../host-sdk/index.ts";
import { startAgentProcess, startTrackerProcess, waitForFreeBoards, type AgentProcess, type TrackerProcess } from "../helpers/processes.ts";
import { CODES, FakeRpcServer, TRACKER_MAGIC, TrackerConn, int32, splitAddress } from "../tvm/fake-tvm.ts";

/** The budget: whichever ends first. */
const TIME_BUDGET_S = 10;
const MAX_RUNS = 3000;
/** How long the tracker may take to answer or close one run's connection. */
const ANSWER_MS = 5000;
/** The tracker's cap on a TVM REQUEST's wait (`--tvm-deadline-ms`): a REQUEST is answered at the latest then. */
const REQUEST_CAP_MS = 100;

/** One frame as sent: its bytes, and whether they are a whole frame the tracker must answer or close on. */
interface Piece {
  bytes: Buffer;
  whole: boolean;
}

const withLength = (body: Buffer): Piece => ({ bytes: Buffer.concat([int32(body.length), body]), whole: true });

const jsonRequest = fc
  .tuple(fc.integer({ min: -3, max: 9 }), fc.array(fc.jsonValue({ maxDepth: 4 }), { maxLength: 4 }))
  .map(([code, args]) => withLength(Buffer.from(JSON.stringify([code, ...args]), "utf8")));
const nested = fc.tuple(fc.integer({ min: 1, max: 8000 }), fc.constantFrom("[", '{"a":'), fc.boolean()).map(([depth, open, wrap]) => {
  const close = open === "[" ? "]" : "}";
  const inner = `${open.repeat(depth)}${open === "[" ? "" : "1"}${close.repeat(depth)}`;
  return withLength(Buffer.from(wrap ? `[1, ${inner}]` : inner, "utf8"));
});
const garbage = fc.uint8Array({ minLength: 1, maxLength: 2048 }).map((b) => withLength(Buffer.from(b)));
const badLength = fc
  .tuple(fc.oneof(fc.integer({ min: -(2 ** 31), max: 0 }), fc.integer({ min: 4097, max: 2 ** 31 - 1 })), fc.uint8Array({ maxLength: 64 }))
  .map(([n, rest]): Piece => ({ bytes: Buffer.concat([int32(n), Buffer.from(rest)]), whole: true }));
const piece = fc.oneof(jsonRequest, nested, garbage, badLength);

const input = fc.record({
  magic: fc.oneof({ weight: 9, arbitrary: fc.constant(TRACKER_MAGIC) }, { weight: 1, arbitrary: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }) }),
  pieces: fc.array(piece, { minLength: 1, maxLength: 4 }),
  /** Cut the last piece short (a truncated frame), then end our side. */
  truncate: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }),
});

/** Reply frames in `bytes` after the magic's echo. */
function replies(bytes: Buffer): number {
  let at = 4;
  let n = 0;
  while (bytes.length >= at + 4) {
    const len = bytes.readInt32LE(at);
    if (bytes.length < at + 4 + len) break;
    at += 4 + len;
    n++;
  }
  return n;
}

describe("fuzz: TVM tracker frames", () => {
  let tracker: TrackerProcess;
  let agent: AgentProcess;
  let client: TrackerClient;

  before(async () => {
    // A REQUEST waits for a server as with TVM's tracker, with no cap by default: the cap answers them here.
    tracker = await startTrackerProcess(["--tvm-port", "0", "--tvm-deadline-ms", String(REQUEST_CAP_MS)]);
    agent = await startAgentProcess(tracker.address, ["cpu:key=kf-cpu"]);
    client = await connectTracker(tracker.address);
    await waitForFreeBoards(client, 1);
  });
  after(async () => {
    client?.close();
    await agent?.stop();
    await tracker?.stop();
  });

  it("random frames, each on a fresh connection: the tracker lives, every connection is answered or closed, the farm still serves", async () => {
    const executions = await fuzz("tvm-frames", { runs: MAX_RUNS, seconds: TIME_BUDGET_S }, input, async ({ magic, pieces, truncate }) => {
      const socket = connect({ ...splitAddress(tracker.tvmAddress!), noDelay: true });
      await once(socket, "connect");
      try {
        const bytes = pieces.map((p) => p.bytes);
        const last = bytes.length - 1;
        if (truncate !== undefined) bytes[last] = bytes[last]!.subarray(0, Math.max(0, bytes[last]!.length - truncate));
        const whole = truncate === undefined ? pieces.length : last;
        const outcome = receiveUntil(
          socket,
          ANSWER_MS,
          () => `neither answered nor closed within ${ANSWER_MS} ms`,
          (received) => magic === TRACKER_MAGIC && replies(received) >= whole,
        );
        socket.write(Buffer.concat([int32(magic), ...bytes]));
        // A frame cut short waits for its rest: the peer ends, the tracker closes.
        if (truncate !== undefined) socket.end();
        await outcome;
        assert.equal(tracker.proc.exitCode, null, `the tracker exited:\n${tracker.stderr()}`);
      } finally {
        socket.destroy();
      }
    });
    assert.ok(executions > 0);
    assert.equal(tracker.proc.exitCode, null);

    // The farm still serves: a TVM server registers and a TVM client is granted it; a kernelfarm session runs.
    const server = await FakeRpcServer.start(tracker.tvmAddress!, "fuzz-after", { pollMs: 500 });
    try {
      const asker = await TrackerConn.open(tracker.tvmAddress!);
      assert.equal(await asker.call([CODES.PING]), CODES.SUCCESS);
      await waitForFreeBoards(client, 1, "fuzz-after");
      assert.deepEqual(await asker.request("fuzz-after"), [CODES.SUCCESS, ["127.0.0.1", server.port, server.matchkey]]);
      asker.close();
    } finally {
      server.stop();
    }
    const s = await client.request("kf-cpu");
    assert.deepEqual(await s.listdir(), []);
    await s.close();
  });
});
