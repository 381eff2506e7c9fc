/**
 * kernelfarm's TVM port (tracker/tvm/) on a real tracker process, driven by
 * a TVM client and server written from the protocol description
 * (tests/tvm/fake-tvm.ts): a server registers and shows in `kfarm status`,
 * the live view and the metrics as a board of kind tvm-rpc; a client's
 * REQUEST is served by kernelfarm's queue with TVM's semantics (it waits for
 * any key, with no cap unless the operator sets one; equal priorities in
 * arrival order; priorities, drains) and gets the server's address and match
 * key; the fake server checks the key as TVM's does; the lease returns when
 * the server puts itself back; a late client keeps its server until the
 * server gives the key up; a tracker that stops closes TVM clients'
 * connections, and they are served after its restart.
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
import { CODES, FakeRpcServer, TrackerConn, rpcConnect, splitAddress } from "./fake-tvm.ts";

type Grant = [number, [string, number, string]];

/**
 * A tracker with a TVM port for one describe block (started before its tests, stopped after), and what its tests
 * open on it: TVM connections and fake TVM servers, closed at the end.
 */
function tvmTracker(args: string[]) {
  const open: Array<{ close(): void } | { stop(): void }> = [];
  const farm = {
    tracker: undefined as unknown as TrackerProcess,
    client: undefined as unknown as TrackerClient,
    async conn(): Promise<TrackerConn> {
      const c = await TrackerConn.open(farm.tracker.tvmAddress!);
      open.push(c);
      return c;
    },
    async server(key: string, pollMs = 500): Promise<FakeRpcServer> {
      const s = await FakeRpcServer.start(farm.tracker.tvmAddress!, key, { pollMs });
      open.push(s);
      return s;
    },
    async board(key: string, state?: string) {
      return waitFor(`a TVM board of key ${key}${state ? ` ${state}` : ""}`, async () =>
        (await farm.client.summary()).boards.find((b) => b.kind === "tvm-rpc" && b.key === key && (!state || b.state === state)),
      );
    },
  };
  before(async () => {
    farm.tracker = await startTrackerProcess(["--tvm-port", "0", ...args]);
    farm.client = await connectTracker(farm.tracker.address);
  });
  after(async () => {
    for (const o of open) {
      if ("stop" in o) o.stop();
      else o.close();
    }
    farm.client?.close();
    await farm.tracker?.stop();
  });
  return farm;
}

describe("TVM's tracker protocol on kernelfarm's tracker", () => {
  const farm = tvmTracker(["--metrics-port", "0"]);
  const { conn, server, board } = farm;

  it("a server registers: kfarm status, the live view and the metrics show a board of kind tvm-rpc", async () => {
    const s = await server("ts-cpu");
    const b = await board("ts-cpu", "free");
    // Granted only after the tracker probed its port: the server dropped one opening without the RPC magic, as TVM's does unlogged.
    await waitFor("the probe's opening dropped at the server", () => s.dropped === 1);
    assert.equal(s.mismatches, 0, "no mismatch key: TVM's server would log a warning for it");
    assert.equal(b.id, `tvm@127.0.0.1:${s.port}/ts-cpu`);
    assert.deepEqual(b.labels, { address: `127.0.0.1:${s.port}` });
    assert.equal(b.capabilities.tvm_key, "server:ts-cpu");

    const status = await runCli(["status", "--tracker", farm.tracker.address]);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, new RegExp(`tvm@127\\.0\\.0\\.1:${s.port}/ts-cpu\\s+ts-cpu\\s+tvm-rpc\\s+free`));

    const m = await scrape(farm.tracker.httpAddress!);
    assert.equal(m.get("kernelfarm_boards", { key: "ts-cpu", kind: "tvm-rpc", state: "free" }), 1);
    assert.equal(m.get("kernelfarm_board_info", { board: b.id, key: "ts-cpu", kind: "tvm-rpc", agent: `tvm@127.0.0.1:${s.port}` }), 1);
    assert.ok((m.get("kernelfarm_tvm_connections") ?? 0) >= 1);

    const ws = new WebSocket(`ws://${farm.tracker.httpAddress}/feed`);
    const first = await once(ws, "message");
    ws.close();
    const snapshot = unpack(first[0] as Buffer) as FeedSnapshot;
    assert.equal(snapshot.kind, "snapshot");
    assert.ok(
      snapshot.summary.boards.some((x) => x.id === b.id && x.kind === "tvm-rpc"),
      "the live view's snapshot lists the TVM server",
    );
    s.stop();
    await waitFor("the server to leave", async () => !(await farm.client.summary()).boards.some((x) => x.id === b.id));
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
    const m = await scrape(farm.tracker.httpAddress!);
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

  it("equal priorities are served in arrival order (TVM's FIFO, the default): X1 X2 X3 then Y1 Y2 from two clients", async () => {
    await server("ts-fifo", 200);
    await board("ts-fifo", "free");
    const holder = (await (await conn()).request("ts-fifo")) as Grant;
    const held = await rpcConnect(...holder[1]);
    await board("ts-fifo", "busy");
    // Two clients, told apart by the user their REQUEST names (TVM's client names none; per-client fairness would alternate them).
    const served: string[] = [];
    const waits: Array<Promise<void>> = [];
    for (const tag of ["X1", "X2", "X3", "Y1", "Y2"]) {
      const c = await conn();
      c.send([CODES.REQUEST, "ts-fifo", tag[0], 1]);
      await waitFor(`${tag} queued`, async () => (await (await conn()).summary()).queue_info["ts-fifo"]?.pending === waits.length + 1);
      waits.push(
        (async () => {
          const r = (await c.next()) as Grant;
          const session = await rpcConnect(...r[1]);
          served.push(tag);
          session.socket.destroy();
        })(),
      );
    }
    held.socket.destroy();
    await Promise.all(waits);
    assert.deepEqual(served, ["X1", "X2", "X3", "Y1", "Y2"]);
  });

  it("a key no server serves yet: the REQUEST waits, and is served when a server of the key registers", async () => {
    const c = await conn();
    c.send([CODES.REQUEST, "ts-later", "", 1]);
    await waitFor("the request waiting", async () => (await (await conn()).summary()).queue_info["ts-later"]?.pending === 1);
    const s = await server("ts-later");
    const reply = (await c.next()) as Grant;
    assert.equal(reply[0], CODES.SUCCESS);
    assert.deepEqual(reply[1], ["127.0.0.1", s.port, s.matchkey]);
    (await rpcConnect(...reply[1])).socket.destroy();
    await board("ts-later", "free");
  });

  it("a late client keeps its server until the server gives the key up (TVM's rule), then the server is free with a new key", async () => {
    const s = await server("ts-late", 1000);
    await board("ts-late", "free");
    const late = (await (await conn()).request("ts-late")) as Grant;
    // Three polls out (three quarters of the server's patience, where kernelfarm's tracker took the key back after 3 s): still the client's.
    const puts = s.puts;
    await waitFor("three polls since the grant", () => s.misses === 3);
    assert.equal((await board("ts-late")).state, "busy");
    const { socket } = await rpcConnect(...late[1]);
    socket.destroy();
    await board("ts-late", "free");
    assert.deepEqual(s.sessions, [`client:${late[1][2]}`]);
    // A client that never comes: the server gives the key up at its 4th poll out, and PUTs a fresh one.
    const never = (await (await conn()).request("ts-late")) as Grant;
    await waitFor("the server's new key", () => s.puts === puts + 2);
    const free = await board("ts-late", "free");
    assert.equal(free.state, "free");
    await assert.rejects(rpcConnect(...never[1]), /cannot find server that matches key/);
    const m = await scrape(farm.tracker.httpAddress!);
    assert.equal(m.get("kernelfarm_sessions_ended_total", { key: "ts-late", reason: "OK", lane: "tvm" }), 1);
    assert.equal(m.get("kernelfarm_sessions_ended_total", { key: "ts-late", reason: "CANCELLED", lane: "none" }), 1);
  });

  it("operators' commands apply: a drained TVM server is not granted, a restored one is", async () => {
    await server("ts-drain");
    const b = await board("ts-drain", "free");
    const drain = await runCli(["board", "drain", b.id, "--tracker", farm.tracker.address, "--reason", "new fan"]);
    assert.equal(drain.code, 0, drain.stderr);
    // TVM's client cannot tell a refusal from a bug: its REQUEST waits (with a cap, the failure says why: the suite below).
    const waiting = await conn();
    waiting.send([CODES.REQUEST, "ts-drain", "", 1]);
    await waitFor("the request waiting", async () => (await (await conn()).summary()).queue_info["ts-drain"]?.pending === 1);
    const restore = await runCli(["board", "restore", b.id, "--tracker", farm.tracker.address]);
    assert.equal(restore.code, 0, restore.stderr);
    const granted = (await waiting.next()) as Grant;
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

  it("kernelfarm hosts and TVM clients share no boards: a host is told where the TVM servers are, a TVM client waits", async () => {
    await server("ts-shared");
    await board("ts-shared", "free");
    await assert.rejects(farm.client.request("ts-shared"), (err: Error & { code?: string }) => {
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
    const c = await TrackerConn.open(farm.tracker.tvmAddress!);
    c.send([CODES.REQUEST, "ts-gone", "", 1]);
    await waitFor("one pending", async () => (await (await conn()).summary()).queue_info["ts-gone"]?.pending === 1);
    c.close();
    await waitFor("none pending", async () => (await (await conn()).summary()).queue_info["ts-gone"]?.pending === 0);
    held.socket.destroy();
    await board("ts-gone", "free");
  });
});

describe("the operator's cap on the TVM port (--tvm-deadline-ms 1500)", () => {
  const farm = tvmTracker(["--tvm-deadline-ms", "1500"]);
  const { conn, server, board } = farm;

  it("a request whose servers stay taken fails DEADLINE_EXCEEDED at the cap", async () => {
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

  it("a request no board could serve fails at the cap naming why: no server of the key, every server drained", async () => {
    const none = (await (await conn()).request("cap-none")) as [number, string];
    assert.match(none[1], /^\[DEADLINE_EXCEEDED\] no board of key "cap-none" could serve the request within 1500 ms: no TVM server serves key "cap-none"/);
    await server("cap-drain");
    const b = await board("cap-drain", "free");
    const drain = await runCli(["board", "drain", b.id, "--tracker", farm.tracker.address, "--reason", "new fan"]);
    assert.equal(drain.code, 0, drain.stderr);
    const drained = (await (await conn()).request("cap-drain")) as [number, string];
    assert.match(
      drained[1],
      /^\[DEADLINE_EXCEEDED\] no board of key "cap-drain" could serve the request within 1500 ms: every board of key "cap-drain" is out of rotation: .*drained by .*: new fan/,
    );
  });
});

describe("a tracker that stops, with a TVM request waiting", () => {
  it("closes the waiting client's connection unanswered (TVM's client then reconnects); the same request is served after the restart", async () => {
    const first = await startTrackerProcess(["--tvm-port", "0"]);
    const port = splitAddress(first.tvmAddress!).port;
    let second: TrackerProcess | undefined;
    let s: FakeRpcServer | undefined;
    try {
      const waiting = await TrackerConn.open(first.tvmAddress!);
      waiting.send([CODES.REQUEST, "ts-stop", "", 1]);
      await waitFor("the request queued", async () => (await (await TrackerConn.open(first.tvmAddress!)).summary()).queue_info["ts-stop"]?.pending === 1);
      const answer = waiting.next().then(
        (reply) => ({ reply }),
        (err: Error) => ({ closed: err }),
      );
      await first.stop();
      const outcome = await answer;
      assert.ok("closed" in outcome, `no reply, only a closed connection: got ${JSON.stringify(outcome)}`);
      // As TVM's client does on a closed connection: reconnect (to the restarted tracker) and ask again.
      second = await startTrackerProcess(["--tvm-port", String(port)]);
      const again = await TrackerConn.open(second.tvmAddress!);
      again.send([CODES.REQUEST, "ts-stop", "", 1]);
      s = await FakeRpcServer.start(second.tvmAddress!, "ts-stop", { pollMs: 500 });
      const reply = (await again.next()) as Grant;
      assert.equal(reply[0], CODES.SUCCESS);
      assert.deepEqual(reply[1], ["127.0.0.1", s.port, s.matchkey]);
    } finally {
      s?.stop();
      await first.stop();
      await second?.stop();
    }
  });
});
