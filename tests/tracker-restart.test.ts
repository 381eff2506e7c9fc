/**
 * A tracker that restarts without forgetting (docs/architecture.md, "Tracker
 * restarts"), with real processes: a tracker with a state directory is
 * killed and started again on the same port, and its agent re-attaches.
 *
 * Operators' quarantines and drains come back with who and why, in the
 * summary, `kfarm status` and the live view, even when the tracker was
 * SIGKILLed right after answering the command; a restore after a restart
 * clears them for good. A board's automatic health (suspect after a failed
 * canary) and its history come back too, and the canary its agent repeats at
 * attach is not counted twice. A damaged or newer state file stops the start,
 * naming the file and what to do. Hosts see clear errors: a request waiting
 * in the queue when the tracker dies is UNAVAILABLE "went away while this
 * request … waited", one waiting when it is stopped is UNAVAILABLE "shutting
 * down"; open sessions end UNAVAILABLE (killed) or DRAINED (stopped), and
 * the same client requests again once the tracker is back.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { unpack } from "msgpackr";
import WebSocket from "ws";
import { connectTracker, type Session, type TrackerClient } from "../host-sdk/index.ts";
import type { FeedSnapshot } from "../tracker/live/protocol.ts";
import { names, refused } from "./helpers/assertions.ts";
import { runCli, startAgentProcess, startTrackerProcess, waitFor, waitForFreeBoards, type AgentProcess, type TrackerProcess } from "./helpers/processes.ts";

/** Adds 1 to one element: every canary of the board that loads it fails the same way. */
const BROKEN_CANARY = `#include <stdint.h>
void kfarm_canary_vadd(const float* a, const float* b, float* c, int32_t n) {
  for (int32_t i = 0; i < n; i++) c[i] = a[i] + b[i] + (i == 3);
}
`;
const CANARY_FAILURE = "canary failed: vadd[3] = 10.5, expected 9.5";

describe("a tracker that restarts without forgetting", () => {
  let dir: string;
  let stateDir: string;
  let stateFile: string;
  let tracker: TrackerProcess;
  let agent: AgentProcess;
  let client: TrackerClient;
  let port: number;

  const trackerArgs = () => ["--state-dir", stateDir, "--metrics-port", "0"];
  const board = async (id: string) => (await client.summary({ healthHistory: true })).boards.find((b) => b.id === id);

  /** Stops the tracker with `signal`, starts it again on the same port, and waits (polling the summary) until the agent's four boards are back. */
  async function restart(signal: NodeJS.Signals): Promise<void> {
    await tracker.stop(signal);
    tracker = await startTrackerProcess(trackerArgs(), port);
    client.close();
    client = await connectTracker(tracker.address);
    await waitFor("the agent to re-attach", async () => (await client.summary()).boards.length === 4, 10_000);
  }

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "kfarm-restart-"));
    stateDir = join(dir, "state");
    stateFile = join(stateDir, "tracker-state.json");
    writeFileSync(join(dir, "broken.c"), BROKEN_CANARY);
    execFileSync("cc", ["-shared", "-fPIC", "-o", join(dir, "broken.so"), join(dir, "broken.c")]);
    tracker = await startTrackerProcess(trackerArgs());
    port = tracker.port;
    // Canaries only when a worker starts (interval 0): the broken board fails once and stays suspect.
    agent = await startAgentProcess(
      tracker.address,
      ["cpu:key=cpu,name=c0", "cpu:key=cpu,name=c1", "cpu:key=cpu,name=c2", `cpu:key=flaky,name=bad,canary=${join(dir, "broken.so")}`],
      ["--name", "keeper", "--canary-interval-ms", "0"],
    );
    client = await connectTracker(tracker.address);
    await waitForFreeBoards(client, 3, "cpu");
  });
  after(async () => {
    client?.close();
    await agent?.stop();
    await tracker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("quarantine and drain, with who and why, survive a SIGKILL right after they were answered; so does a suspect board and its history", async () => {
    const suspect = await waitFor("the broken board suspect", async () => {
      const b = await board("keeper/bad");
      return b?.health === "suspect" ? b : undefined;
    });
    assert.equal(suspect.health_reason, CANARY_FAILURE);
    const q = await client.boardCommand("keeper/c0", "quarantine", "alice", "fan failing");
    assert.equal(q.health_reason, "quarantined by alice: fan failing");
    const d = await client.boardCommand("keeper/c1", "drain", "bob", "new fan on Tuesday");
    assert.equal(d.drain_reason, "drained by bob: new fan on Tuesday");

    // Answered means written: a crash now forgets nothing.
    await restart("SIGKILL");

    const c0 = (await board("keeper/c0"))!;
    assert.equal(c0.state, "quarantined");
    assert.equal(c0.health, "quarantined");
    assert.equal(c0.health_reason, "quarantined by alice: fan failing");
    assert.deepEqual(
      c0.health_history.map((c) => [c.from, c.to, c.reason]),
      [["healthy", "quarantined", "quarantined by alice: fan failing"]],
    );
    const c1 = (await board("keeper/c1"))!;
    assert.equal(c1.drained, true);
    assert.equal(c1.drain_reason, "drained by bob: new fan on Tuesday");
    assert.equal(c1.health, "healthy");
    assert.equal(
      await waitFor("keeper/c1 ready, and draining", async () => ((await board("keeper/c1"))?.state === "draining" ? "draining" : undefined)),
      "draining",
    );
    // The agent repeated the broken board's last canary when it attached: the tracker had counted it, so it is suspect still, not quarantined.
    const bad = (await board("keeper/bad"))!;
    assert.equal(bad.health, "suspect");
    assert.equal(bad.health_reason, CANARY_FAILURE);
    assert.equal(bad.last_canary, `failed: ${CANARY_FAILURE.replace("canary failed: ", "")}`);
    assert.deepEqual(
      bad.health_history.map((c) => [c.from, c.to, c.reason]),
      [["healthy", "suspect", CANARY_FAILURE]],
    );
    assert.ok(bad.health_history[0]!.at_ms > 0 && bad.health_history[0]!.at_ms <= Date.now());

    // Sessions of key cpu go only to the board in rotation.
    await waitForFreeBoards(client, 1, "cpu");
    for (let i = 0; i < 2; i++) {
      const s = await client.request("cpu", { deadlineMs: 10_000 });
      assert.equal(s.board.id, "keeper/c2");
      await s.close();
      await waitFor("keeper/c2 free again", async () => (await board("keeper/c2"))?.state === "free");
    }

    // kfarm status, with and without the history.
    const status = await runCli(["status", "--tracker", tracker.address, "--width", "0"]);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /keeper\/c0 .* quarantined .* quarantined: quarantined by alice: fan failing/);
    assert.match(status.stdout, /keeper\/c1 .* draining: drained by bob: new fan on Tuesday/);
    assert.doesNotMatch(status.stdout, /Health History/);
    const history = await runCli(["status", "--tracker", tracker.address, "--history", "--width", "0"]);
    assert.match(history.stdout, /Health History/);
    assert.match(history.stdout, /keeper\/bad +\S+Z +healthy → suspect +canary failed: vadd\[3\]/);

    // The live view's snapshot says the same.
    const ws = new WebSocket(`ws://${tracker.httpAddress}/feed`, { perMessageDeflate: false });
    const [first] = (await once(ws, "message")) as [Buffer];
    ws.close();
    const live = (unpack(first) as FeedSnapshot).summary.boards;
    assert.equal(live.find((b) => b.id === "keeper/c0")?.health_reason, "quarantined by alice: fan failing");
    assert.equal(live.find((b) => b.id === "keeper/c1")?.drain_reason, "drained by bob: new fan on Tuesday");
  });

  it("a restore after a restart clears the command for good: a second restart finds the boards healthy, with the history kept", async () => {
    for (const id of ["keeper/c0", "keeper/c1"]) {
      const b = await client.boardCommand(id, "restore", "carol");
      assert.equal(b.health, "healthy");
      assert.equal(b.drained, false);
    }
    await waitForFreeBoards(client, 3, "cpu");

    // A graceful stop this time: the tracker writes what it remembers on its way out.
    await restart("SIGTERM");
    await waitForFreeBoards(client, 3, "cpu");
    const c0 = (await board("keeper/c0"))!;
    assert.equal(c0.health, "healthy");
    assert.deepEqual(
      c0.health_history.map((c) => c.reason),
      ["quarantined by alice: fan failing", "restored by carol"],
    );
    const c1 = (await board("keeper/c1"))!;
    assert.equal(c1.drained, false);
    assert.equal(c1.drain_reason, "");

    const file = JSON.parse(readFileSync(stateFile, "utf8"));
    assert.equal(file.version, 1);
    assert.equal(file.boards["keeper/c0"].health.held, false);
    assert.equal(file.boards["keeper/c1"].drain, "");
    assert.equal(file.boards["keeper/bad"].health.state, "suspect");
  });

  it("a command on a remembered board that is not attached applies when it comes back", async () => {
    await agent.stop();
    await waitFor("the agent's boards gone", async () => (await client.summary()).boards.length === 0);
    const b = await client.boardCommand("keeper/c2", "quarantine", "dave", "pulled for repair");
    assert.equal(b.state, "absent");
    assert.equal(b.health_reason, "quarantined by dave: pulled for repair");
    names(
      await refused(client.boardCommand("nobody/x", "drain"), "NOT_FOUND"),
      "nobody/x",
      "remembered, not attached: keeper/bad, keeper/c0, keeper/c1, keeper/c2",
    );
    agent = await startAgentProcess(
      tracker.address,
      ["cpu:key=cpu,name=c0", "cpu:key=cpu,name=c1", "cpu:key=cpu,name=c2", `cpu:key=flaky,name=bad,canary=${join(dir, "broken.so")}`],
      ["--name", "keeper", "--canary-interval-ms", "0"],
    );
    await waitFor("keeper/c2 back, quarantined", async () => (await board("keeper/c2"))?.health_reason === "quarantined by dave: pulled for repair");
    await client.boardCommand("keeper/c2", "restore", "dave");
    await waitForFreeBoards(client, 3, "cpu");
  });

  it("hosts see clear errors: queued requests fail UNAVAILABLE (went away / shutting down), open sessions end; the same client requests again once the tracker is back", async () => {
    for (const [signal, queuedError, sessionCode, sessionError] of [
      [
        "SIGKILL",
        /^the tracker at \S+ went away while this request for key "cpu" waited in its queue \(for \d+ ms; .*\): request again/,
        "UNAVAILABLE",
        /the tracker at \S+ went away .*: the board's agent ends the session too\. Request a new session/,
      ],
      [
        "SIGTERM",
        /^the tracker at \S+ is shutting down; this request for key "cpu" left its queue after \d+ ms: request again when it is back/,
        "DRAINED",
        /the tracker at \S+ is shutting down, and this session with it/,
      ],
    ] as const) {
      const sessions: Session[] = [];
      for (let i = 0; i < 3; i++) sessions.push(await client.request("cpu", { deadlineMs: 10_000 }));
      const queued = client.request("cpu", { deadlineMs: 30_000 });
      queued.catch(() => {});
      await waitFor("the request queued", async () => (await client.summary()).queues.find((q) => q.key === "cpu")?.pending === 1);
      const same = client;
      await tracker.stop(signal);
      const e = await refused(queued, "UNAVAILABLE");
      assert.match(e.message, queuedError);
      for (const s of sessions) {
        await waitFor("the session to end", () => s.isClosed);
        assert.equal(s.closedReason?.code, sessionCode, `${signal}: ${s.closedReason?.message}`);
        assert.match(s.closedReason!.message, sessionError);
        await refused(s.listdir(), sessionCode);
      }
      tracker = await startTrackerProcess(trackerArgs(), port);
      const probe = await connectTracker(tracker.address);
      await waitFor("the agent to re-attach", async () => (await probe.summary()).boards.length === 4, 10_000);
      probe.close();
      const back = Date.now();
      // The host's client was not closed: it reconnects by itself, and its boards are back (the agent replaced the workers it killed).
      const again = await waitFor("the same client to get a session again", () => same.request("cpu", { deadlineMs: 10_000 }), 10_000, 100);
      process.stdout.write(`# ${signal}: the same client had a session ${Date.now() - back} ms after the agent was back\n`);
      assert.match(again.board.id, /^keeper\/c[012]$/);
      await again.close();
    }
  });

  it("a damaged state file stops the start, naming the file and what to do; so does one from a newer tracker", async () => {
    await tracker.stop("SIGTERM");
    const good = readFileSync(stateFile, "utf8");
    writeFileSync(stateFile, good.slice(0, good.length / 2));
    await assert.rejects(startTrackerProcess(trackerArgs(), port), (e: Error) => {
      assert.match(e.message, /exited \(code 1\) before it was ready/);
      assert.ok(e.message.includes(`the tracker's state file ${stateFile} is not JSON`), e.message);
      assert.ok(e.message.includes(`mv ${stateFile} ${stateFile}.bad`), e.message);
      assert.match(e.message, /\[INVALID_ARGUMENT\]/);
      return true;
    });
    assert.equal(readFileSync(stateFile, "utf8"), good.slice(0, good.length / 2), "left as it was, for a look");

    writeFileSync(stateFile, JSON.stringify({ version: 2, boards: {} }));
    await assert.rejects(startTrackerProcess(trackerArgs(), port), (e: Error) => {
      assert.ok(e.message.includes(`the tracker's state file ${stateFile} is version 2, written by a newer tracker; this one reads version 1`), e.message);
      return true;
    });

    // Moved aside, as the message says: the tracker starts with no memory, and the agent's boards come back as new.
    renameSync(stateFile, `${stateFile}.bad`);
    tracker = await startTrackerProcess(trackerArgs(), port);
    client.close();
    client = await connectTracker(tracker.address);
    await waitFor("the agent to re-attach", async () => (await client.summary()).boards.length === 4, 10_000);
    const c0 = (await board("keeper/c0"))!;
    assert.deepEqual(c0.health_history, []);
    assert.equal(JSON.parse(readFileSync(stateFile, "utf8")).version, 1);
  });
});

describe("a tracker without a state directory (no --state-dir, no --tokens)", () => {
  it("keeps a board's commands while it runs, across its agent's re-attach, and forgets them when it restarts", async () => {
    let tracker = await startTrackerProcess([]);
    const boards = ["cpu:key=cpu,name=c0"];
    let agent = await startAgentProcess(tracker.address, boards, ["--name", "plain"]);
    let client = await connectTracker(tracker.address);
    try {
      await waitForFreeBoards(client, 1);
      await client.boardCommand("plain/c0", "quarantine", "erin");
      await agent.stop();
      agent = await startAgentProcess(tracker.address, boards, ["--name", "plain"]);
      await waitFor("plain/c0 back", async () => (await client.summary()).boards.length === 1);
      assert.equal((await client.summary()).boards[0]!.health_reason, "quarantined by erin");

      await tracker.stop("SIGTERM");
      tracker = await startTrackerProcess([], tracker.port);
      client.close();
      client = await connectTracker(tracker.address);
      await waitForFreeBoards(client, 1);
      const b = (await client.summary({ healthHistory: true })).boards[0]!;
      assert.equal(b.health, "healthy");
      assert.deepEqual(b.health_history, []);
    } finally {
      client.close();
      await agent.stop();
      await tracker.stop();
    }
  });
});
