/**
 * Bad input on the TVM port (tracker/tvm/), each against a real tracker
 * process with a kernelfarm agent attached: the peer gets a clear answer (or,
 * when the byte stream cannot be followed, the connection ends), and the
 * tracker, the other TVM connections and kernelfarm sessions keep working.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { readdirSync } from "node:fs";
import { connect, createServer, type Socket } from "node:net";
import { after, afterEach, before, describe, it } from "node:test";
import { connectTracker, type TrackerClient } from "../../host-sdk/index.ts";
import { scrape } from "../helpers/metrics.ts";
import { freePort, startAgentProcess, startTrackerProcess, waitFor, waitForFreeBoards, type AgentProcess, type TrackerProcess } from "../helpers/processes.ts";
import { CODES, FakeRpcServer, SocketReader, TRACKER_MAGIC, TrackerConn, frame, int32, splitAddress } from "./fake-tvm.ts";

/** The tracker's limits, as docs/tvm-tracker.md states them. */
const MAX_FRAME_BYTES = 4 * 1024;
const MAX_JSON_DEPTH = 16;

/** A raw socket to the TVM port, its bytes read by exact counts. */
async function raw(address: string, opts: { localAddress?: string } = {}): Promise<{ socket: Socket; reader: SocketReader }> {
  const socket = connect({ ...splitAddress(address), ...opts });
  await once(socket, "connect");
  return { socket, reader: new SocketReader(socket) };
}

async function readFrame(reader: SocketReader): Promise<unknown> {
  const n = (await reader.read(4)).readInt32LE(0);
  return JSON.parse((await reader.read(n)).toString("utf8"));
}

describe("bad input on the TVM port", () => {
  let tracker: TrackerProcess;
  let agent: AgentProcess;
  let client: TrackerClient;

  before(async () => {
    // At info level: the tests read the one line a bad frame's connection ends with.
    tracker = await startTrackerProcess(
      // A cap on TVM requests (none by default, as TVM's tracker): a request no board can serve ends, naming why.
      ["--tvm-port", "0", "--metrics-port", "0", "--tvm-allow", "127.0.0.1/32", "--tvm-keys", "ok-key,tvm-dead,tvm-live,tvm-own", "--tvm-deadline-ms", "1000"],
      0,
      { env: { KFARM_LOG: "info" } },
    );
    agent = await startAgentProcess(tracker.address, ["cpu:key=kf-cpu,name=c0"]);
    client = await connectTracker(tracker.address);
    await waitForFreeBoards(client, 1, "kf-cpu");
  });
  after(async () => {
    client?.close();
    await agent?.stop();
    await tracker?.stop();
  });

  /** After each case: another TVM connection is answered, and a kernelfarm session runs. */
  afterEach(async () => {
    const c = await TrackerConn.open(tracker.tvmAddress!);
    assert.equal(await c.call([CODES.PING]), CODES.SUCCESS);
    c.close();
    const s = await client.request("kf-cpu");
    await s.listdir();
    await s.close();
  });

  it("a wrong magic: the connection ends, nothing is answered", async () => {
    const { socket, reader } = await raw(tracker.tvmAddress!);
    socket.write(Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"));
    await reader.closed();
    await assert.rejects(reader.read(1), /closed/);
  });

  it("truncated: a half handshake and a half frame, then the peer goes; and a half frame held open", async () => {
    const a = await raw(tracker.tvmAddress!);
    a.socket.end(Buffer.from([0x71, 0xf2]));
    await a.reader.closed();
    const b = await raw(tracker.tvmAddress!);
    b.socket.write(int32(TRACKER_MAGIC));
    assert.equal((await b.reader.read(4)).readInt32LE(0), TRACKER_MAGIC);
    b.socket.end(Buffer.concat([int32(100), Buffer.from('[6, "not all')]));
    await b.reader.closed();
    // A half frame held open waits for the rest, harming nobody (afterEach checks); the frame's rest then completes it.
    const c = await raw(tracker.tvmAddress!);
    c.socket.write(int32(TRACKER_MAGIC));
    await c.reader.read(4);
    const ping = frame([CODES.PING]);
    c.socket.write(ping.subarray(0, 5));
    const other = await TrackerConn.open(tracker.tvmAddress!);
    assert.equal(await other.call([CODES.PING]), CODES.SUCCESS);
    other.close();
    c.socket.write(ping.subarray(5));
    assert.equal(await readFrame(c.reader), CODES.SUCCESS);
    c.socket.destroy();
  });

  it("frame lengths outside 1…4 KiB: a PROTOCOL_ERROR answer, then the connection ends", async () => {
    for (const n of [MAX_FRAME_BYTES + 1, 0, -5, 0x7fffffff]) {
      const { socket, reader } = await raw(tracker.tvmAddress!);
      socket.write(int32(TRACKER_MAGIC));
      await reader.read(4);
      socket.write(int32(n));
      const reply = (await readFrame(reader)) as [number, string];
      assert.equal(reply[0], CODES.FAIL);
      assert.equal(reply[1], `[PROTOCOL_ERROR] a frame of ${n} bytes: the TVM port takes frames of 1 to ${MAX_FRAME_BYTES} bytes`);
      await reader.closed();
    }
    // The largest frame allowed is read: 4 KiB of JSON that is one long string.
    const c = await TrackerConn.open(tracker.tvmAddress!);
    const body = JSON.stringify([CODES.PING, "x".repeat(MAX_FRAME_BYTES - 20)]);
    assert.ok(Buffer.byteLength(body) <= MAX_FRAME_BYTES);
    assert.equal(await c.call(JSON.parse(body)), CODES.SUCCESS);
    c.close();
  });

  it("a frame of 6,000 [ and 6,000 ] (12 KB, the reported crash) and one nested past 16: the connection ends with the reason, the tracker lives", async () => {
    const attack = Buffer.from(`${"[".repeat(6000)}${"]".repeat(6000)}`);
    const deep = Buffer.from(`[1, ${"[".repeat(MAX_JSON_DEPTH)}${"]".repeat(MAX_JSON_DEPTH)}]`);
    for (const [body, want] of [
      [attack, `[PROTOCOL_ERROR] a frame of 12000 bytes: the TVM port takes frames of 1 to ${MAX_FRAME_BYTES} bytes`],
      [
        deep,
        `[PROTOCOL_ERROR] a frame of ${deep.length} bytes nests arrays and objects more than ${MAX_JSON_DEPTH} deep: TVM's tracker requests nest 3 deep at most`,
      ],
    ] as const) {
      const { socket, reader } = await raw(tracker.tvmAddress!);
      socket.write(int32(TRACKER_MAGIC));
      await reader.read(4);
      const local = `127.0.0.1:${socket.localPort}`;
      socket.write(Buffer.concat([int32(body.length), body]));
      assert.deepEqual(await readFrame(reader), [CODES.FAIL, want]);
      await reader.closed();
      // One line names the peer and what was wrong.
      await waitFor(
        "the log line",
        () =>
          tracker
            .stderr()
            .split("\n")
            .filter((l) => l.includes(`closing the connection from ${local}`)).length === 1,
      );
      assert.match(tracker.stderr(), new RegExp(`closing the connection from ${local}: a frame of ${body.length} bytes`));
    }
    assert.equal(tracker.proc.exitCode, null);
    // Brackets inside strings do not count, and 16 deep is still a request: answered.
    const c = await TrackerConn.open(tracker.tvmAddress!);
    assert.equal(
      await c.call([CODES.PING, '[[[[[[[[[[[[[[[[[[[[\\"[[[[', JSON.parse(`${"[".repeat(MAX_JSON_DEPTH - 1)}${"]".repeat(MAX_JSON_DEPTH - 1)}`)]),
      CODES.SUCCESS,
    );
    c.close();
  });

  it("a PUT naming another address than its own is refused and that address is never probed; its own address registers", async () => {
    // What a port scan through the tracker would reach: a listener on 127.0.0.2, counting connections.
    let probed = 0;
    const target = createServer((s) => {
      probed++;
      s.destroy();
    }).listen(0, "127.0.0.2");
    await once(target, "listening");
    const targetPort = (target.address() as { port: number }).port;
    const c = await TrackerConn.open(tracker.tvmAddress!);
    assert.equal(await c.call([CODES.UPDATE_INFO, { key: "server:ok-key", addr: ["127.0.0.2", targetPort] }]), CODES.SUCCESS);
    const reply = (await c.call([CODES.PUT, "ok-key", [targetPort, "ok-key:0.1"], "127.0.0.2"])) as [number, string];
    assert.equal(reply[0], CODES.FAIL);
    assert.match(
      reply[1],
      /^\[PERMISSION_DENIED\] PUT names 127\.0\.0\.2 as the address its clients connect to, but this server's tracker connection comes from 127\.0\.0\.1: .*start rpc_server without --custom-addr/,
    );
    c.close();
    // A server naming its own address (and one naming none) registers, is probed there, and is served.
    const own = await FakeRpcServer.start(tracker.tvmAddress!, "tvm-own", { customAddr: "127.0.0.1" });
    await waitFor("the server naming its own address free", async () =>
      (await client.summary()).boards.some((b) => b.id === `tvm@127.0.0.1:${own.port}/tvm-own` && b.state === "free"),
    );
    const asker = await TrackerConn.open(tracker.tvmAddress!);
    assert.deepEqual(await asker.request("tvm-own"), [CODES.SUCCESS, ["127.0.0.1", own.port, own.matchkey]]);
    asker.close();
    own.stop();
    await waitFor("the server to leave", async () => !(await client.summary()).boards.some((b) => b.key === "tvm-own"));
    assert.ok(!(await client.summary()).boards.some((b) => b.key === "ok-key"), "no board for the refused PUT");
    assert.equal(probed, 0, "the tracker connected to the address the refused PUT named");
    target.close();
  });

  it("not JSON, not a request, unknown codes, bad fields, STOP: each answered [-1, reason], the connection goes on", async () => {
    const { socket, reader } = await raw(tracker.tvmAddress!);
    socket.write(int32(TRACKER_MAGIC));
    await reader.read(4);
    const cases: Array<[Buffer, RegExp]> = [
      [Buffer.concat([int32(8), Buffer.from("not json")]), /^\[INVALID_ARGUMENT\] a frame of 8 bytes is not UTF-8 JSON/],
      [Buffer.concat([int32(2), Buffer.from([0xc3, 0x28])]), /^\[INVALID_ARGUMENT\] a frame of 2 bytes is not UTF-8 JSON/],
      [frame({ code: 1 }), /^\[INVALID_ARGUMENT\] a tracker request is a JSON array whose first element is a tracker code/],
      [frame([]), /^\[INVALID_ARGUMENT\] a tracker request is a JSON array/],
      [
        frame([99]),
        /^\[INVALID_ARGUMENT\] unknown tracker code 99; codes: 1 PING, 2 STOP, 3 PUT, 4 REQUEST, 5 UPDATE_INFO, 6 SUMMARY, 7 GET_PENDING_MATCHKEYS/,
      ],
      [frame([CODES.STOP, "tracker:0.5"]), /^\[PERMISSION_DENIED\] STOP is not obeyed on kernelfarm's TVM port/],
      [frame([CODES.PUT, "ok-key", [9090, "ok-key:0.1"], null]), /^\[INVALID_ARGUMENT\] PUT before UPDATE_INFO/],
      [frame([CODES.REQUEST, "ok-key", "", "high"]), /^\[INVALID_ARGUMENT\] REQUEST's priority is a 32-bit integer/],
      [frame([CODES.REQUEST, "", "", 1]), /^\[INVALID_ARGUMENT\] REQUEST's key is a string of 1 to 256 characters/],
      [frame([CODES.UPDATE_INFO, ["server:ok-key"]]), /^\[INVALID_ARGUMENT\] UPDATE_INFO carries a JSON object/],
      [frame([CODES.UPDATE_INFO, { key: "server:ok-key", addr: "here" }]), /^\[INVALID_ARGUMENT\] UPDATE_INFO's addr is \[host \| null, port\]/],
      [frame([CODES.UPDATE_INFO, { key: "server:ok-key", addr: [null, 70000] }]), /^\[INVALID_ARGUMENT\] UPDATE_INFO's addr port is a TCP port/],
    ];
    for (const [bytes, want] of cases) {
      socket.write(bytes);
      const reply = (await readFrame(reader)) as [number, string];
      assert.equal(reply[0], CODES.FAIL, `${bytes.toString()}: ${JSON.stringify(reply)}`);
      assert.match(reply[1], want);
    }
    socket.write(frame([CODES.PING]));
    assert.equal(await readFrame(reader), CODES.SUCCESS);
    socket.destroy();
  });

  it("a PUT for a port that never answers: the server is not granted, its health says why, a REQUEST ends at the cap naming it", async () => {
    const port = await freePort();
    const c = await TrackerConn.open(tracker.tvmAddress!);
    assert.equal(await c.call([CODES.UPDATE_INFO, { key: "server:tvm-dead", addr: [null, port] }]), CODES.SUCCESS);
    assert.equal(await c.call([CODES.PUT, "tvm-dead", [port, "tvm-dead:0.1"], null]), CODES.SUCCESS);
    const id = `tvm@127.0.0.1:${port}/tvm-dead`;
    // Probed at once (refused), again PROBE_RETRY_MS later: two failures quarantine it.
    const quarantined = await waitFor(
      "the server quarantined by its probes",
      async () => (await client.summary()).boards.find((b) => b.id === id && b.health === "quarantined"),
      15_000,
    );
    assert.equal(quarantined.state, "quarantined");
    assert.match(quarantined.health_reason, new RegExp(`its RPC port 127\\.0\\.0\\.1:${port} cannot be reached: ECONNREFUSED`));
    const asker = await TrackerConn.open(tracker.tvmAddress!);
    const reply = (await asker.request("tvm-dead")) as [number, string];
    asker.close();
    assert.equal(reply[0], CODES.FAIL);
    assert.match(
      reply[1],
      /^\[DEADLINE_EXCEEDED\] no board of key "tvm-dead" could serve the request within 1000 ms: every board of key "tvm-dead" is out of rotation: .*cannot be reached: ECONNREFUSED/,
    );
    // The server's connection is still served (its polls are answered: the key was never given out).
    assert.deepEqual(await c.call([CODES.GET_PENDING_MATCHKEYS]), ["tvm-dead:0.1"]);
    c.close();
    await waitFor("the server to leave", async () => !(await client.summary()).boards.some((b) => b.id === id));
  });

  it("a REQUEST for a key nobody serves waits (as with TVM's tracker) and ends at the cap, naming why", async () => {
    const asker = await TrackerConn.open(tracker.tvmAddress!);
    const t0 = Date.now();
    const reply = (await asker.request("ok-key")) as [number, string];
    assert.ok(Date.now() - t0 >= 900, `answered after ${Date.now() - t0} ms, before the cap`);
    asker.close();
    assert.equal(reply[0], CODES.FAIL);
    assert.match(
      reply[1],
      /^\[DEADLINE_EXCEEDED\] no board of key "ok-key" could serve the request within 1000 ms: no TVM server serves key "ok-key"; keys TVM servers serve: \(none: no TVM server is registered\)/,
    );
  });

  it("admission: a peer outside --tvm-allow and keys outside --tvm-keys are refused, each with its reason", async () => {
    const before = await scrape(tracker.httpAddress!);
    const outsider = await TrackerConn.open(tracker.tvmAddress!, { localAddress: "127.0.0.2" });
    const refused = (await outsider.request("ok-key")) as [number, string];
    assert.equal(refused[0], CODES.FAIL);
    assert.match(refused[1], /^\[PERMISSION_DENIED\] 127\.0\.0\.2 is not in the TVM port's networks \(--tvm-allow 127\.0\.0\.1\/32\)/);
    await outsider.closed();
    const c = await TrackerConn.open(tracker.tvmAddress!);
    const key = (await c.request("other-key")) as [number, string];
    assert.equal(key[0], CODES.FAIL);
    assert.match(key[1], /^\[PERMISSION_DENIED\] key "other-key" is not served on the TVM port \(--tvm-keys ok-key,tvm-dead,tvm-live,tvm-own\)/);
    const server = (await c.call([CODES.UPDATE_INFO, { key: "server:other-key", addr: [null, 9090] }])) as [number, string];
    assert.match(server[1], /^\[PERMISSION_DENIED\] key "other-key" is not served/);
    c.close();
    const after = await scrape(tracker.httpAddress!);
    assert.equal(
      (after.get("kernelfarm_tvm_refused_total", { reason: "network" }) ?? 0) - (before.get("kernelfarm_tvm_refused_total", { reason: "network" }) ?? 0),
      1,
    );
    assert.equal((after.get("kernelfarm_tvm_refused_total", { reason: "key" }) ?? 0) - (before.get("kernelfarm_tvm_refused_total", { reason: "key" }) ?? 0), 2);
  });

  it("thousands of connections opened and dropped: the tracker's descriptors and connection gauge return to baseline, a live server stays", async () => {
    const live = await FakeRpcServer.start(tracker.tvmAddress!, "tvm-live", { pollMs: 500 });
    await waitFor("the live server free", async () => (await client.summary()).boards.some((b) => b.key === "tvm-live" && b.state === "free"));
    const fds = () => readdirSync(`/proc/${tracker.proc.pid}/fd`).length;
    const gauge = async () => (await scrape(tracker.httpAddress!)).get("kernelfarm_tvm_connections");
    const baseFds = fds();
    const baseGauge = await gauge();
    assert.equal(baseGauge, 1, "the live server's connection");
    const ROUNDS = 10;
    const PER_ROUND = 200;
    for (let r = 0; r < ROUNDS; r++) {
      await Promise.all(
        Array.from({ length: PER_ROUND }, async (_, i) => {
          const { socket, reader } = await raw(tracker.tvmAddress!);
          // Four ways to go: at once, after the handshake, mid-frame, and after a SUMMARY answered.
          if (i % 4 === 1) {
            socket.write(int32(TRACKER_MAGIC));
            await reader.read(4);
          } else if (i % 4 === 2) {
            socket.write(Buffer.concat([int32(TRACKER_MAGIC), int32(50), Buffer.from("[4, ")]));
          } else if (i % 4 === 3) {
            socket.write(Buffer.concat([int32(TRACKER_MAGIC), frame([CODES.SUMMARY])]));
            await reader.read(4);
            await readFrame(reader);
          }
          socket.destroy();
        }),
      );
    }
    await waitFor(`descriptors back to ${baseFds} and the gauge to ${baseGauge}`, async () => fds() <= baseFds && (await gauge()) === baseGauge, 15_000, 100);
    assert.equal((await client.summary()).boards.find((b) => b.key === "tvm-live")?.state, "free");
    const asker = await TrackerConn.open(tracker.tvmAddress!);
    const grant = (await asker.request("tvm-live")) as [number, [string, number, string]];
    assert.deepEqual(grant, [CODES.SUCCESS, ["127.0.0.1", live.port, live.matchkey]]);
    asker.close();
    live.stop();
  });
});
