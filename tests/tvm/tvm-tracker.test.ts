/**
 * kernelfarm's TVM port (tracker/tvm/) on a real tracker process, driven by
 * a TVM client and server written from the protocol description
 * (tests/tvm/fake-tvm.ts): a server registers and shows in `kfarm status`,
 * the live view and the metrics as a board of kind tvm-rpc; a client's
 * REQUEST is served by kernelfarm's queue (priorities, the deadline, drains)
 * and gets the server's address and match key; the fake server checks the
 * key as TVM's does; the lease returns when the server puts itself back.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { after, before, describe, it } from "node:test";
import { unpack } from "msgpackr";
import WebSocket from "ws";
import { connectTracker, type TrackerClient } from "../../host-sdk/index.ts";
import type { FeedSnapshot } from "../../tracker/live/protocol.ts";
import { scrape } from "../helpers/metrics.ts";
import { runCli, startTrackerProcess, waitFor, type TrackerProcess } from "../helpers/processes.ts";
import { CODES, FakeRpcServer, TrackerConn, rpcConnect } from "./fake-tvm.ts";

type Grant = [number, [string, number, string]];

describe("TVM's tracker protocol on kernelfarm's tracker", () => {
  let tracker: TrackerProcess;
  let client: TrackerClient;
  const open: Array<{ close(): void } | { stop(): void }> = [];

  before(async () => {
    tracker = await startTrackerProcess(["--tvm-port", "0", "--metrics-port", "0", "--default-deadline-ms", "1500"]);
    client = await connectTracker(tracker.address);
  });
  after(async () => {
    for (const o of open) {
      if ("stop" in o) o.stop();
      else o.close();
    }
    client?.close();
    await tracker?.stop();
  });

  const tvm = () => tracker.tvmAddress!;
  async function conn(): Promise<TrackerConn> {
    const c = await TrackerConn.open(tvm());
    open.push(c);
    return c;
  }
  async function server(key: string, pollMs = 500): Promise<FakeRpcServer> {
    const s = await FakeRpcServer.start(tvm(), key, { pollMs });
    open.push(s);
    return s;
  }
  async function board(key: string, state?: string) {
    return waitFor(`a TVM board of key ${key}${state ? ` ${state}` : ""}`, async () =>
      (await client.summary()).boards.find((b) => b.kind === "tvm-rpc" && b.key === key && (!state || b.state === state)),
    );
  }

  it("a server registers: kfarm status, the live view and the metrics show a board of kind tvm-rpc", async () => {
    const s = await server("ts-cpu");
    const b = await board("ts-cpu", "free");
    // Granted only after the tracker probed its port: the server saw one connection with a key it does not hold.
    await waitFor("the probe's mismatch at the server", () => s.mismatches === 1);
    assert.equal(b.id, `tvm@127.0.0.1:${s.port}/ts-cpu`);
    assert.deepEqual(b.labels, { address: `127.0.0.1:${s.port}` });
    assert.equal(b.capabilities.tvm_key, "server:ts-cpu");

    const status = await runCli(["status", "--tracker", tracker.address]);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, new RegExp(`tvm@127\\.0\\.0\\.1:${s.port}/ts-cpu\\s+ts-cpu\\s+tvm-rpc\\s+free`));

    const m = await scrape(tracker.httpAddress!);
    assert.equal(m.get("kernelfarm_boards", { key: "ts-cpu", kind: "tvm-rpc", state: "free" }), 1);
    assert.equal(m.get("kernelfarm_board_info", { board: b.id, key: "ts-cpu", kind: "tvm-rpc", agent: `tvm@127.0.0.1:${s.port}` }), 1);
    assert.ok((m.get("kernelfarm_tvm_connections") ?? 0) >= 1);

    const ws = new WebSocket(`ws://${tracker.httpAddress}/feed`);
    const first = await once(ws, "message");
    ws.close();
    const snapshot = unpack(first[0] as Buffer) as FeedSnapshot;
    assert.equal(snapshot.kind, "snapshot");
    assert.ok(
      snapshot.summary.boards.some((x) => x.id === b.id && x.kind === "tvm-rpc"),
      "the live view's snapshot lists the TVM server",
    );
    s.stop();
    await waitFor("the server to leave", async () => !(await client.summary()).boards.some((x) => x.id === b.id));
  });

  it("request → the server's address and match key → the client connects → the lease returns when the server puts itself back", async () => {
    const s = await server("ts-lease");
    await board("ts-lease", "free");
    const reply = (await (await conn()).request("ts-lease")) as Grant;
    assert.equal(reply[0], CODES.SUCCESS);
    assert.deepEqual(reply[1], ["127.0.0.1", s.port, s.matchkey]);
    await assert.rejects(rpcConnect("127.0.0.1", s.port, "ts-lease:0.5"), /cannot find server that matches key/);
    const { socket, remoteKey } = await rpcConnect(...reply[1]);
    assert.equal(remoteKey, "server:ts-lease");
    const busy = await board("ts-lease", "busy");
    assert.ok(busy.session_id && busy.client_id.startsWith("tvm:127.0.0.1"));
    await waitFor("the lease active on the tvm lane", async () => (await board("ts-lease", "busy")).session_lane === "tvm");
    socket.destroy();
    await board("ts-lease", "free");
    assert.deepEqual(s.sessions, [`client:${reply[1][2]}`]);
    assert.equal(s.error, undefined);
    const m = await scrape(tracker.httpAddress!);
    assert.equal(m.get("kernelfarm_sessions_ended_total", { key: "ts-lease", reason: "OK", lane: "tvm" }), 1);
    assert.equal(m.get("kernelfarm_sessions_started_total", { key: "ts-lease" }), 1);
  });

  it("priorities: the highest waiting request is served first", async () => {
    const s = await server("ts-prio");
    await board("ts-prio", "free");
    const holder = (await (await conn()).request("ts-prio")) as Grant;
    const held = await rpcConnect(...holder[1]);
    const order: number[] = [];
    const waits: Array<Promise<void>> = [];
    for (const priority of [1, 5, 3]) {
      const c = await conn();
      c.send([CODES.REQUEST, "ts-prio", "", priority]);
      await waitFor(
        `request ${priority} queued`,
        async () => (await (await conn()).summary()).queue_info["ts-prio"]?.pending === order.length + waits.length + 1,
      );
      waits.push(
        (async () => {
          const r = (await c.next()) as Grant;
          assert.equal(r[0], CODES.SUCCESS);
          const session = await rpcConnect(...r[1]);
          order.push(priority);
          session.socket.destroy();
        })(),
      );
    }
    held.socket.destroy();
    await Promise.all(waits);
    assert.deepEqual(order, [5, 3, 1]);
    assert.equal(s.sessions.length, 4);
  });

  it("the deadline: a request whose servers stay taken fails DEADLINE_EXCEEDED at the tracker's default deadline", async () => {
    await server("ts-deadline");
    await board("ts-deadline", "free");
    const holder = (await (await conn()).request("ts-deadline")) as Grant;
    const held = await rpcConnect(...holder[1]);
    const t0 = Date.now();
    const reply = (await (await conn()).request("ts-deadline")) as [number, string];
    const waited = Date.now() - t0;
    assert.equal(reply[0], CODES.FAIL);
    assert.match(reply[1], /^\[DEADLINE_EXCEEDED\] no board of key "ts-deadline" became free within 1500 ms/);
    assert.ok(waited >= 1400 && waited < 5000, `waited ${waited} ms`);
    held.socket.destroy();
    await board("ts-deadline", "free");
  });

  it("operators' commands apply: a drained TVM server is not granted, a restored one is", async () => {
    await server("ts-drain");
    const b = await board("ts-drain", "free");
    const drain = await runCli(["board", "drain", b.id, "--tracker", tracker.address, "--reason", "new fan"]);
    assert.equal(drain.code, 0, drain.stderr);
    const refused = (await (await conn()).request("ts-drain")) as [number, string];
    assert.equal(refused[0], CODES.FAIL);
    assert.match(refused[1], /^\[NO_BOARD\] every board of key "ts-drain" is out of rotation: .*drained by .*: new fan/);
    const restore = await runCli(["board", "restore", b.id, "--tracker", tracker.address]);
    assert.equal(restore.code, 0, restore.stderr);
    const granted = (await (await conn()).request("ts-drain")) as Grant;
    assert.equal(granted[0], CODES.SUCCESS);
  });

  it("a server keeps the key it registered: another key on its connection is refused, and it goes on serving", async () => {
    const s = await server("ts-keep");
    await board("ts-keep", "free");
    const c = await conn();
    assert.equal(await c.call([CODES.UPDATE_INFO, { key: "server:ts-keep", addr: [null, 1] }]), CODES.SUCCESS);
    assert.equal(await c.call([CODES.PUT, "ts-keep", [1, "ts-keep:0.1"], null]), CODES.SUCCESS);
    const other = (await c.call([CODES.UPDATE_INFO, { key: "server:ts-other" }])) as [number, string];
    assert.match(other[1], /^\[INVALID_ARGUMENT\] this connection registered TVM server "server:ts-keep"; it cannot become "server:ts-other"/);
    const numeric = (await c.call([CODES.UPDATE_INFO, { key: 5 }])) as [number, string];
    assert.match(numeric[1], /^\[INVALID_ARGUMENT\] this connection registered TVM server "server:ts-keep"; it cannot become 5/);
    const put = (await c.call([CODES.PUT, "ts-other", [1, "ts-other:0.1"], null])) as [number, string];
    assert.match(put[1], /^\[INVALID_ARGUMENT\] PUT for key "ts-other" on the connection of TVM server "server:ts-keep": one server per tracker connection/);
    const moved = (await c.call([CODES.PUT, "ts-keep", [2, "ts-keep:0.2"], null])) as [number, string];
    assert.match(moved[1], /^\[INVALID_ARGUMENT\] PUT for 127\.0\.0\.1:2 from TVM server tvm@127\.0\.0\.1:1\/ts-keep: a server keeps its address/);
    const summary = await c.summary();
    assert.ok(
      summary.server_info.every((i) => typeof i.key === "string" && (i.key as string).startsWith("server:")),
      JSON.stringify(summary.server_info),
    );
    c.close();
    const granted = (await (await conn()).request("ts-keep")) as Grant;
    assert.equal(granted[0], CODES.SUCCESS);
    assert.equal(granted[1][1], s.port, "the fake server's board, not the address-less one");
    assert.equal(s.error, undefined);
  });

  it("kernelfarm hosts and TVM clients share no boards: each is told where the other's are", async () => {
    await server("ts-shared");
    await board("ts-shared", "free");
    await assert.rejects(client.request("ts-shared"), (err: Error & { code?: string }) => {
      assert.equal(err.code, "NO_BOARD");
      assert.match(err.message, /1 TVM server\(s\) of key "ts-shared" serve TVM clients only, on the TVM port/);
      return true;
    });
  });

  it("a REQUEST whose client leaves while it waits leaves the queue at once (TVM's tracker keeps it)", async () => {
    await server("ts-gone");
    await board("ts-gone", "free");
    const holder = (await (await conn()).request("ts-gone")) as Grant;
    const held = await rpcConnect(...holder[1]);
    const c = await TrackerConn.open(tvm());
    c.send([CODES.REQUEST, "ts-gone", "", 1]);
    await waitFor("one pending", async () => (await (await conn()).summary()).queue_info["ts-gone"]?.pending === 1);
    c.close();
    await waitFor("none pending", async () => (await (await conn()).summary()).queue_info["ts-gone"]?.pending === 0);
    held.socket.destroy();
    await board("ts-gone", "free");
  });
});

describe("a tracker that stops, with a TVM request waiting", () => {
  it("answers the waiting TVM client UNAVAILABLE before its connection ends", async () => {
    const tracker = await startTrackerProcess(["--tvm-port", "0"]);
    const s = await FakeRpcServer.start(tracker.tvmAddress!, "ts-stop", { pollMs: 500 });
    try {
      const first = await TrackerConn.open(tracker.tvmAddress!);
      await waitFor("the server free", async () => (await first.summary()).queue_info["ts-stop"]?.free === 1);
      const holder = (await first.request("ts-stop")) as Grant;
      const held = await rpcConnect(...holder[1]);
      const waiting = await TrackerConn.open(tracker.tvmAddress!);
      waiting.send([CODES.REQUEST, "ts-stop", "", 1]);
      await waitFor("the request queued", async () => (await first.summary()).queue_info["ts-stop"]?.pending === 1);
      const answer = waiting.next();
      await tracker.stop();
      const reply = (await answer) as [number, string];
      assert.equal(reply[0], CODES.FAIL);
      assert.match(reply[1], /^\[UNAVAILABLE\] the tracker at .* is shutting down; this request for key "ts-stop" left its queue after \d+ ms/);
      await waiting.closed();
      held.socket.destroy();
    } finally {
      s.stop();
      await tracker.stop();
    }
  });
});
