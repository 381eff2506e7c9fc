/**
 * Operator commands on boards, against real tracker and agent processes:
 * quarantine takes a board out of rotation (its health and reason visible in
 * the summary), a request for a key whose every board is out of rotation is
 * refused at once naming why, drain lets the running session finish but
 * grants nothing new, restore brings boards back; unknown boards and
 * commands get clear errors and the tracker keeps serving.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import type { TrackerClient } from "../host-sdk/index.ts";
import { names, refused } from "./helpers/assertions.ts";
import { startFarm, waitFor, waitForFreeBoards } from "./helpers/processes.ts";

const CLI = fileURLToPath(new URL("../cli/main.ts", import.meta.url));

describe("operator board commands", () => {
  let farm: Awaited<ReturnType<typeof startFarm>>;
  let client: TrackerClient;
  let ids: string[];

  before(async () => {
    farm = await startFarm(["cpu:key=cpu,name=c0", "cpu:key=cpu,name=c1"]);
    client = farm.client;
    ids = (await client.summary()).boards.map((b) => b.id).sort();
  });
  after(async () => farm?.stop());

  async function boardOf(id: string) {
    return (await client.summary()).boards.find((b) => b.id === id)!;
  }

  it("quarantine takes a board out of rotation, visibly; requests go to the other board", async () => {
    const b = await client.boardCommand(ids[0]!, "quarantine", "alice");
    assert.equal(b.state, "quarantined");
    assert.equal(b.health, "quarantined");
    assert.equal(b.health_reason, "quarantined by alice");
    for (let i = 0; i < 3; i++) {
      const s = await client.request("cpu");
      assert.equal(s.board.id, ids[1]);
      await s.close();
      await waitForFreeBoards(client, 1);
    }
  });

  it("with every board out of rotation a request is NO_BOARD at once, naming each board and why", async () => {
    await client.boardCommand(ids[1]!, "drain", "bob");
    const t0 = Date.now();
    const e = await refused(client.request("cpu", { deadlineMs: 30_000 }), "NO_BOARD");
    assert.ok(Date.now() - t0 < 5000, "refused at once, not at the deadline");
    names(e, ids[0]!, "quarantined by alice", ids[1]!, "drained");
  });

  it("restore brings both back", async () => {
    for (const id of ids) {
      const b = await client.boardCommand(id, "restore", "carol");
      assert.equal(b.health, "healthy");
      assert.equal(b.drained, false);
    }
    await waitForFreeBoards(client, 2);
    const s = await client.request("cpu");
    await s.close();
  });

  it("drain lets the running session finish and grants nothing new on that board", async () => {
    const s = await client.request("cpu");
    const held = s.board.id;
    await client.boardCommand(held, "drain", "dave");
    assert.deepEqual(await s.listdir(), [], "the running session goes on");
    await s.close();
    // close() returns at the worker's clean end; the tracker frees the board when the agent's report follows.
    await waitFor("the drained board's session to end", async () => (await boardOf(held)).state !== "busy");
    assert.equal((await boardOf(held)).state, "draining");
    for (let i = 0; i < 2; i++) {
      const next = await client.request("cpu");
      assert.notEqual(next.board.id, held);
      await next.close();
      await waitForFreeBoards(client, 1);
    }
    await client.boardCommand(held, "restore", "dave");
    await waitForFreeBoards(client, 2);
  });

  it("an unknown board is NOT_FOUND listing the boards, an unknown command INVALID_ARGUMENT; the tracker goes on", async () => {
    names(await refused(client.boardCommand("nope/x", "drain"), "NOT_FOUND"), "nope/x", ids[0]!, ids[1]!);
    names(await refused(client.boardCommand(ids[0]!, "explode" as "drain"), "INVALID_ARGUMENT"), "explode", "drain, quarantine, restore");
    const s = await client.request("cpu");
    await s.close();
  });

  it("kfarm board quarantine / restore from the command line, and status shows the health", async () => {
    const run = (...args: string[]) =>
      spawnSync(process.execPath, ["--import", "tsx", CLI, ...args], { encoding: "utf8", env: { ...process.env, KFARM_LOG: "error" } });
    const q = run("board", "quarantine", ids[1]!, "--tracker", farm.tracker.address, "--by", "eve");
    assert.equal(q.status, 0, q.stderr);
    assert.match(q.stdout, new RegExp(`${ids[1]}: state quarantined, health quarantined \\(quarantined by eve\\)`));
    const status = run("status", "--tracker", farm.tracker.address, "--width", "0");
    assert.match(status.stdout, /quarantined: quarantined by eve/);
    const bad = run("board", "reboot", ids[1]!, "--tracker", farm.tracker.address);
    assert.notEqual(bad.status, 0);
    assert.match(bad.stderr, /unknown board command "reboot"/);
    assert.equal(run("board", "restore", ids[1]!, "--tracker", farm.tracker.address).status, 0);
    await waitForFreeBoards(client, 2);
  });
});
