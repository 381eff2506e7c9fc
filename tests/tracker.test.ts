/**
 * The tracker's scheduling and summary against real processes: priority,
 * fairness across clients, label selectors, `kfarm status`, agent config
 * files, and the relay's indifference to payloads.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import * as grpc from "@grpc/grpc-js";
import {
  AgentService,
  FARM_VERSION,
  type FarmError,
  HostService,
  SESSION_ID_HEADER,
  SESSION_REQUEST_HEADER,
  SESSION_TOKEN_HEADER,
  decodeBoardFrame,
  encodeSessionRequest,
  type AgentServiceClient,
  type HostServiceClient,
} from "../protos/index.ts";
import { makeClient } from "../runtime/index.ts";
import type { AgentMessage } from "../protos/gen/farm/v1/AgentMessage.ts";
import type { BoardKind } from "../protos/gen/farm/v1/BoardKind.ts";
import type { TrackerMessage__Output } from "../protos/gen/farm/v1/TrackerMessage.ts";
import { rawSession } from "./helpers/raw-session.ts";
import { connectTracker, type TrackerClient } from "../host-sdk/index.ts";
import { runCli, startAgentProcess, startFarm, startTrackerProcess, waitFor, waitForFreeBoards } from "./helpers/processes.ts";

const run = promisify(execFile);
const CLI = fileURLToPath(new URL("../cli/main.ts", import.meta.url));

async function pending(client: TrackerClient, key: string): Promise<number> {
  return (await client.summary()).queues.find((q) => q.key === key)?.pending ?? 0;
}

describe("scheduling", () => {
  let farm: Awaited<ReturnType<typeof startFarm>>;
  const clients: TrackerClient[] = [];
  before(async () => {
    farm = await startFarm(["cpu:key=one,name=solo"]);
  });
  after(async () => {
    for (const c of clients) c.close();
    await farm.stop();
  });

  async function client(id: string): Promise<TrackerClient> {
    const c = await connectTracker(farm.tracker.address, { clientId: id });
    clients.push(c);
    return c;
  }

  /** Queues requests one by one (waiting until each is pending), then frees the board and records the grant order. */
  async function grantOrder(requests: Array<{ client: TrackerClient; label: string; priority?: number }>): Promise<string[]> {
    const holder = await farm.client.request("one");
    const order: string[] = [];
    const done = requests.map(async (r, i) => {
      await waitFor(`request ${i} to be queued in turn`, async () => (await pending(farm.client, "one")) === i || order.length > 0);
      const s = await r.client.request("one", { priority: r.priority ?? 1, deadlineMs: 20_000 });
      order.push(r.label);
      await s.close();
    });
    // Requests enter the queue strictly one after another.
    for (let i = 0; i < requests.length; i++) await waitFor(`request ${i} queued`, async () => (await pending(farm.client, "one")) >= i + 1);
    await holder.close();
    await Promise.all(done);
    return order;
  }

  it("serves a higher priority first, FIFO within a priority", async () => {
    const [a, b, c] = await Promise.all([client("a"), client("b"), client("c")]);
    const order = await grantOrder([
      { client: a, label: "a-low", priority: 1 },
      { client: b, label: "b-low", priority: 1 },
      { client: c, label: "c-high", priority: 100 },
    ]);
    assert.deepEqual(order, ["c-high", "a-low", "b-low"]);
  });

  it("is fair across clients within a priority", async () => {
    const [greedy, modest] = await Promise.all([client("greedy"), client("modest")]);
    const order = await grantOrder([
      { client: greedy, label: "g1" },
      { client: greedy, label: "g2" },
      { client: greedy, label: "g3" },
      { client: modest, label: "m1" },
    ]);
    // greedy has been served once (g1) when m1 competes with g2: m1 goes first.
    assert.deepEqual(order, ["g1", "m1", "g2", "g3"]);
  });

  it("a request that gives up while queued leaves the queue", async () => {
    const holder = await farm.client.request("one");
    await assert.rejects(farm.client.request("one", { deadlineMs: 200 }), /DEADLINE|became free/);
    assert.equal(await pending(farm.client, "one"), 0);
    await holder.close();
    await waitForFreeBoards(farm.client, 1);
  });
});

describe("queue waits of any length", () => {
  // The operator's default of 0 is no cap (TVM's tracker waits forever); a wait past Node's 2^31 − 1 ms timer
  // limit is kept, where a plain setTimeout would fire at once (TimeoutOverflowWarning) and fail the request.
  let farm: Awaited<ReturnType<typeof startFarm>>;
  before(async () => {
    farm = await startFarm(["cpu:key=one,name=solo"], { trackerArgs: ["--default-deadline-ms", "0"] });
  });
  after(() => farm.stop());

  for (const [what, deadlineMs] of [
    ["a request naming no deadline, the tracker's default 0", undefined],
    ["a request naming a deadline past 2^31 − 1 ms", 3_000_000_000],
  ] as const) {
    it(`${what}: waits while the board is taken, and is granted when it frees`, async () => {
      const holder = await farm.client.request("one");
      let settled = "";
      const waiting = farm.client.request("one", deadlineMs === undefined ? {} : { deadlineMs }).then(
        (s) => ((settled = "granted"), s),
        (err: FarmError) => {
          settled = `${err.code}: ${err.message}`;
          throw err;
        },
      );
      await waitFor("the request to be queued", async () => (await pending(farm.client, "one")) === 1 || settled !== "");
      // Its deadline timer, had it fired at once, has had the queueing's round trips to do so.
      assert.deepEqual(await holder.listdir(), []);
      assert.equal(settled, "", "still waiting");
      assert.equal(await pending(farm.client, "one"), 1);
      await holder.close();
      const s = await waiting;
      assert.equal(settled, "granted");
      await s.close();
    });
  }
});

describe("label selectors and the summary", () => {
  let tracker: Awaited<ReturnType<typeof startTrackerProcess>>;
  let agent: Awaited<ReturnType<typeof startAgentProcess>>;
  let client: TrackerClient;
  before(async () => {
    tracker = await startTrackerProcess();
    const dir = await mkdtemp(join(tmpdir(), "kf-cfg-"));
    const config = join(dir, "agent.yaml");
    await writeFile(
      config,
      [
        `tracker: ${tracker.address}`,
        "name: rack1",
        "boards:",
        "  - kind: cpu",
        "    key: cpu",
        "    name: fast",
        "    labels: { tier: fast }",
        "  - kind: cpu",
        "    key: cpu",
        "    name: slow",
        "    labels: { tier: slow }",
        "",
      ].join("\n"),
    );
    agent = await startAgentProcess(tracker.address, [], ["--config", config]);
    client = await connectTracker(tracker.address);
    await waitForFreeBoards(client, 2);
  });
  after(async () => {
    client.close();
    await agent.stop();
    await tracker.stop();
  });

  it("registers boards from a YAML config file with their labels", async () => {
    const s = await client.summary();
    assert.deepEqual(
      s.boards.map((b) => [b.id, b.labels.tier, b.agent_name]),
      [
        ["rack1/fast", "fast", "rack1"],
        ["rack1/slow", "slow", "rack1"],
      ],
    );
    assert.equal(s.boards[0]!.labels.arch, process.arch === "x64" ? "x86_64" : s.boards[0]!.labels.arch);
    assert.ok(Number(s.boards[0]!.capabilities.cores) >= 1);
  });

  it("refuses a config file with a misspelled field, naming it and the fields allowed, before it attaches anything", async () => {
    const dir = await mkdtemp(join(tmpdir(), "kf-cfg-typo-"));
    const config = join(dir, "agent.yaml");
    await writeFile(config, ["boards:", "  - kind: cpu", "    key: cpu", "    name: typo", "    lables: { tier: fast }", ""].join("\n"));
    const r = await runCli(["agent", "--tracker", tracker.address, "--config", config]);
    assert.notEqual(r.code, 0, r.stdout);
    assert.match(r.stderr, /boards\[0\]\.lables is not a field here \(misspelled\?\); the fields allowed: kind, key, name, labels, index, options/);
    assert.deepEqual(
      (await client.summary()).boards.map((b) => b.id),
      ["rack1/fast", "rack1/slow"],
    );
  });

  it("grants only boards whose labels match", async () => {
    for (let i = 0; i < 3; i++) {
      const s = await client.request("cpu", { labels: { tier: "slow" } });
      assert.equal(s.board.id, "rack1/slow");
      await s.close();
    }
  });

  it("kfarm status prints the summary as a table and as JSON", async () => {
    const s = await client.request("cpu", { labels: { tier: "fast" } });
    try {
      const table = (await run(process.execPath, ["--import", "tsx", CLI, "status", "--tracker", tracker.address, "--width", "0"])).stdout;
      assert.match(table, new RegExp(`Tracker address ${tracker.address.replace(/\./g, "\\.")}`));
      // The canary column: "-" before a timed canary, then "3.08 µs (baseline 1/5)" while the baseline is learned, "3.1 µs (1.02×)" after.
      const canary = String.raw`(-|[\d.]+ [nµm]?s \((baseline \d+/\d+|[\d.]+×)\))`;
      assert.match(table, new RegExp(String.raw`rack1/fast\s+cpu\s+cpu\s+busy\s+healthy\s+${canary}\s+${s.id}`));
      assert.match(table, new RegExp(String.raw`rack1/slow\s+cpu\s+cpu\s+free\s+healthy\s+${canary}\s+-\s+.*tier=slow`));
      assert.match(table, /Queue Status[\s\S]*key\s+total\s+free\s+pending[\s\S]*\ncpu\s+2\s+1\s+0/);
      const json = JSON.parse((await run(process.execPath, ["--import", "tsx", CLI, "status", "--tracker", tracker.address, "--json"])).stdout);
      assert.deepEqual(json.queues, [{ key: "cpu", total: 2, free: 1, pending: 0 }]);
      assert.equal(json.boards.find((b: { id: string }) => b.id === "rack1/fast").session_id, s.id);
    } finally {
      await s.close();
    }
  });

  it("a summary of one key holds only that key's boards and queue", async () => {
    const other = await startAgentProcess(tracker.address, ["cpu:key=other,name=o0"], ["--name", "rack2"]);
    // Both cpu boards held and a third request waiting: the cpu queue has one pending.
    const held = await Promise.all([client.request("cpu"), client.request("cpu")]);
    const waiting = client.request("cpu", { deadlineMs: 5000 }).then(
      (s) => s.close(),
      () => {},
    );
    try {
      await waitForFreeBoards(client, 1, "other");
      await waitFor("the third cpu request to be queued", async () => ((await client.summary({ key: "cpu" })).queues[0]?.pending === 1 ? true : undefined));
      const all = await client.summary();
      assert.deepEqual(
        all.boards.map((b) => b.id),
        ["rack1/fast", "rack1/slow", "rack2/o0"],
      );
      const cpu = await client.summary({ key: "cpu" });
      assert.deepEqual(
        cpu.boards.map((b) => [b.id, b.state]),
        [
          ["rack1/fast", "busy"],
          ["rack1/slow", "busy"],
        ],
      );
      assert.deepEqual(cpu.queues, [{ key: "cpu", total: 2, free: 0, pending: 1 }]);
      const o = await client.summary({ key: "other" });
      assert.deepEqual([o.boards.map((b) => b.id), o.queues], [["rack2/o0"], [{ key: "other", total: 1, free: 1, pending: 0 }]]);
      const none = await client.summary({ key: "nosuch" });
      assert.deepEqual([none.boards, none.queues], [[], [{ key: "nosuch", total: 0, free: 0, pending: 0 }]]);
      assert.equal(none.agents.length, 2, "agents are listed whatever the key");
      const json = JSON.parse(
        (await run(process.execPath, ["--import", "tsx", CLI, "status", "--tracker", tracker.address, "--json", "--key", "other"])).stdout,
      );
      assert.deepEqual(
        json.boards.map((b: { id: string }) => b.id),
        ["rack2/o0"],
      );
    } finally {
      for (const s of held) await s.close();
      await waiting;
      await other.stop();
    }
    await waitForFreeBoards(client, 2, "cpu");
  });

  it("refuses an agent's board whose kind is unset, one it does not know or the TVM servers' tvm-rpc, naming the kinds agents serve", async () => {
    const raw = makeClient<AgentServiceClient>(AgentService, tracker.address, {});
    /** The Attach stream's status; "registered" (the call ended then) where the tracker took the board. */
    const register = (kind: BoardKind | number | undefined) =>
      new Promise<grpc.StatusObject | "registered">((resolve) => {
        const call = raw.Attach() as unknown as grpc.ClientDuplexStream<AgentMessage, TrackerMessage__Output>;
        call.on("status", resolve).on("error", () => {});
        call.on("data", (m: TrackerMessage__Output) => {
          if (!m.registered) return;
          resolve("registered");
          call.end();
        });
        const spec = { name: "b0", key: "odd", ...(kind === undefined ? {} : { kind: kind as BoardKind }) };
        call.write({ register: { agent_name: "odd", version: FARM_VERSION, boards: [spec] } });
      });
    try {
      // 9: a kind a newer agent might serve, which this tracker's enum lacks.
      for (const [kind, got] of [
        [9, "9"],
        ["BOARD_KIND_TVM_RPC", '"tvm-rpc"'],
        [undefined, '""'],
      ] as const) {
        const status = await register(kind);
        assert.ok(status !== "registered", `the tracker took a board of kind ${String(kind)}`);
        assert.equal(status.code, grpc.status.INVALID_ARGUMENT, String(kind));
        assert.equal(status.metadata.get("farm-code")[0], "INVALID_ARGUMENT");
        assert.equal(status.details, `agent odd's board "b0": board kind must be one of cpu, cuda, vta-sim, vta, tvm, got ${got}`);
      }
    } finally {
      raw.close();
    }
    const s = await client.summary();
    assert.deepEqual([s.boards.filter((b) => b.key === "odd"), s.agents.filter((a) => a.name === "odd")], [[], []]);
    assert.deepEqual(
      s.boards.map((b) => b.kind),
      ["cpu", "cpu"],
      "a board's kind by name",
    );
  });

  it("kfarm status on an unreachable tracker says which address failed", async () => {
    await assert.rejects(run(process.execPath, ["--import", "tsx", CLI, "status", "--tracker", "127.0.0.1:1"]), (e: { stderr: string; code: number }) => {
      assert.equal(e.code, 1);
      assert.match(e.stderr, /cannot reach the tracker at 127\.0\.0\.1:1/);
      return true;
    });
  });

  it("relays session frames without decoding them: garbage reaches the board, which answers PROTOCOL_ERROR", async () => {
    const raw = await rawSession(tracker.address, { key: "cpu", client_id: "raw", route: "grpc" });
    try {
      const frame = await new Promise<Buffer>((resolve) => {
        // The grant was read with the stream paused (awaitGrant): flowing again for the board's reply.
        raw.stream.on("data", resolve).resume();
        raw.stream.write(Buffer.from([0xff, 0xff, 0xff, 0x0f, 0x01]));
      });
      const f = decodeBoardFrame(frame);
      assert.equal(f.result, "error");
      assert.equal(f.error!.code, "PROTOCOL_ERROR");
    } finally {
      raw.close();
    }
    await waitForFreeBoards(client, 2);
  });

  it("refuses a Session stream without a request, with a request that does not decode, or with an unknown route", async () => {
    const raw = makeClient<HostServiceClient>(HostService, tracker.address, {});
    const statusOf = (md: grpc.Metadata) =>
      new Promise<grpc.StatusObject>((resolve) =>
        (raw.Session(md) as unknown as grpc.ClientDuplexStream<Buffer, Buffer>).on("status", resolve).on("error", () => {}),
      );
    try {
      const none = await statusOf(new grpc.Metadata());
      assert.equal(none.code, grpc.status.INVALID_ARGUMENT);
      assert.match(none.details, /farm-session-request-bin/);
      const garbage = new grpc.Metadata();
      garbage.set(SESSION_REQUEST_HEADER, Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f]));
      const bad = await statusOf(garbage);
      assert.equal(bad.code, grpc.status.INVALID_ARGUMENT);
      assert.match(bad.details, /is not a SessionRequest/);
      const routed = new grpc.Metadata();
      // A route this tracker does not know (a newer host's): SessionRequest.route (field 9) = 7.
      routed.set(SESSION_REQUEST_HEADER, Buffer.concat([Buffer.from(encodeSessionRequest({ key: "cpu" })), Buffer.from([(9 << 3) | 0, 7])]));
      const route = await statusOf(routed);
      assert.equal(route.code, grpc.status.INVALID_ARGUMENT);
      assert.match(route.details, /route must be one of auto, direct, relay, grpc, got 7/);
    } finally {
      raw.close();
    }
    await assert.rejects(client.request("cpu", { route: "teleport" as never }), (e: FarmError) => e.code === "INVALID_ARGUMENT" && /teleport/.test(e.message));
    await waitForFreeBoards(client, 2);
  });

  it("refuses a worker stream with the wrong ticket, and the real session goes on", async () => {
    const s = await client.request("cpu", { route: "grpc" });
    const raw = makeClient<AgentServiceClient>(AgentService, tracker.address, {});
    const md = new grpc.Metadata();
    md.set(SESSION_ID_HEADER, s.id);
    md.set(SESSION_TOKEN_HEADER, "not-the-token");
    const stream = raw.ServeSession(md) as unknown as grpc.ClientDuplexStream<Buffer, Buffer>;
    const status = await new Promise<grpc.StatusObject>((resolve) => stream.on("status", resolve).on("error", () => {}));
    assert.equal(status.code, grpc.status.PERMISSION_DENIED);
    assert.equal(status.metadata.get("farm-code")[0], "PERMISSION_DENIED");
    raw.close();
    await s.listdir(); // the real session is unaffected
    await s.close();
  });
});
