/**
 * Board health with real processes: canaries run by each board's idle worker
 * (CPU and VTA simulator here; CUDA in tests/gpu),
 * a deliberately broken board (its canary library adds 1 to one element) that
 * quarantines itself and gets no sessions, an operator restore that its next
 * canaries undo, and an idle worker killed under a healthy board (an
 * infrastructure error) that the replacement's canary clears. Then canary
 * drift: a board whose canary library turns slow on demand (while a file the
 * test makes exists) goes suspect with the figures as reason, visible in the
 * summary, `kfarm status` and the metrics, and healthy again once it is fast.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { connectTracker, type TrackerClient } from "../host-sdk/index.ts";
import { scrape } from "./helpers/metrics.ts";
import { runCli, startAgentProcess, startTrackerProcess, waitFor } from "./helpers/processes.ts";

const BROKEN_CANARY = `#include <stdint.h>
void kfarm_canary_vadd(const float* a, const float* b, float* c, int32_t n) {
  for (int32_t i = 0; i < n; i++) c[i] = a[i] + b[i] + (i == 3);
}
`;

type Tracker = Awaited<ReturnType<typeof startTrackerProcess>>;
type Agent = Awaited<ReturnType<typeof startAgentProcess>>;

/**
 * A folder for canary libraries: readable by workers running as uids of
 * their own (an agent run as root gives them that), which load the libraries
 * and look for files the test makes there.
 */
function canaryDir(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), `kfarm-${name}-`));
  chmodSync(dir, 0o755);
  return dir;
}

/** Builds `source` into the canary library DIR/NAME.so (`defines`: the compiler's -D flags). */
function buildCanary(dir: string, name: string, source: string, defines: string[] = []): string {
  writeFileSync(join(dir, `${name}.c`), source);
  execFileSync("cc", ["-O1", "-shared", "-fPIC", ...defines, "-o", join(dir, `${name}.so`), join(dir, `${name}.c`)]);
  return join(dir, `${name}.so`);
}

/** Ends what a suite started (whatever of it did start) and removes its folder. */
async function stopAll(client: TrackerClient | undefined, agent: Agent | undefined, tracker: Tracker | undefined, dir: string | undefined): Promise<void> {
  client?.close();
  await agent?.stop();
  await tracker?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
}

describe("board health: canaries, quarantine, infrastructure errors", () => {
  let dir: string;
  let tracker: Tracker;
  let agent: Agent;
  let client: TrackerClient;

  before(async () => {
    dir = canaryDir("health");
    const broken = buildCanary(dir, "broken", BROKEN_CANARY);
    // Canaries' answers here; their speed is the next suite's (on a shared VM it wanders by tens of per cent, and would make "good" suspect at times).
    tracker = await startTrackerProcess(["--metrics-port", "0", "--max-canary-drift", "0"]);
    agent = await startAgentProcess(
      tracker.address,
      ["cpu:key=cpu,name=good", `cpu:key=cpu,name=bad,canary=${broken}`, "vta-sim:key=vta,name=v"],
      ["--canary-interval-ms", "250", "--name", "h"],
    );
    client = await connectTracker(tracker.address);
  });
  after(() => stopAll(client, agent, tracker, dir));

  const board = async (id: string) => (await client.summary()).boards.find((b) => b.id === id);

  it("the broken board quarantines itself, naming the wrong element; the good one stays healthy", async () => {
    const bad = await waitFor("the broken board quarantined", async () => {
      const b = await board("h/bad");
      return b?.health === "quarantined" ? b : undefined;
    });
    assert.equal(bad.state, "quarantined");
    assert.match(bad.health_reason, /^2 failures in a row, the last: canary failed: vadd\[3\] = 10\.5, expected 9\.5$/);
    assert.match(bad.last_error, /vadd\[3\] = 10\.5/);
    const good = await waitFor("the good board free", async () => {
      const b = await board("h/good");
      return b?.state === "free" ? b : undefined;
    });
    assert.equal(good.health, "healthy");
    assert.equal(good.last_error, "");
    assert.equal(good.last_canary, "passed: vadd of 64 floats exact");
    const vta = await waitFor("the VTA board's canary", async () => {
      const b = await board("h/v");
      return b?.last_canary ? b : undefined;
    });
    assert.equal(vta.last_canary, "passed: gemm 1×16·16×16 int8 exact, statistics exact");
    assert.equal(vta.health, "healthy");
    // The same in the metrics.
    const m = await scrape(tracker.httpAddress!);
    assert.equal(m.get("kernelfarm_board_health", { board: "h/bad", health: "quarantined" }), 1);
    assert.equal(m.get("kernelfarm_board_health", { board: "h/good", health: "healthy" }), 1);
    assert.ok(m.get("kernelfarm_health_transitions_total", { to: "quarantined" })! >= 1);
    assert.ok(m.get("kernelfarm_health_transitions_total", { to: "suspect" })! >= 1);
  });

  it("sessions go only to the healthy board", async () => {
    for (let i = 0; i < 3; i++) {
      const s = await client.request("cpu", { deadlineMs: 10_000 });
      assert.equal(s.board.id, "h/good");
      await s.close();
      await waitFor("good free again", async () => (await board("h/good"))?.state === "free");
    }
  });

  it("an operator restore does not stick on a board whose canary keeps failing", async () => {
    const restored = await client.boardCommand("h/bad", "restore", "ops");
    assert.equal(restored.health, "healthy");
    const again = await waitFor("quarantined again", async () => {
      const b = await board("h/bad");
      return b?.health === "quarantined" ? b : undefined;
    });
    assert.match(again.health_reason, /failures in a row/);
  });

  it("an idle worker killed under a healthy board is an infrastructure error; the replacement's canary clears it", async () => {
    const s = await client.request("cpu", { deadlineMs: 10_000 });
    assert.equal(s.board.id, "h/good");
    const pid = Number((await s.stats()).info.worker_pid);
    await s.close();
    // A session that loaded nothing gives its worker back: it is the idle one now.
    await waitFor("good free again", async () => (await board("h/good"))?.state === "free");
    process.kill(pid, "SIGKILL");
    const hit = await waitFor("the infrastructure error recorded", async () => {
      const b = await board("h/good");
      return b?.last_error.includes(`${pid} killed by SIGKILL`) ? b : undefined;
    });
    assert.match(hit.last_error, /^infrastructure error: idle session worker \d+ killed by SIGKILL$/);
    await waitFor("healthy again", async () => {
      const b = await board("h/good");
      return b?.health === "healthy" && b.state === "free";
    });
  });
});

/** The CPU canary, slower by 100 µs a call while the file SLOW_FLAG exists: a board the test slows down on demand. */
const SLOW_CANARY = `#include <stdint.h>
#include <time.h>
#include <unistd.h>
void kfarm_canary_vadd(const float* a, const float* b, float* c, int32_t n) {
  for (int32_t i = 0; i < n; i++) c[i] = a[i] + b[i];
  if (access(SLOW_FLAG, F_OK) != 0) return;
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do clock_gettime(CLOCK_MONOTONIC, &t);
  while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 100000);
}
`;

describe("board health: canary drift", () => {
  let dir: string;
  let flag: string;
  let tracker: Tracker;
  let agent: Agent;
  let client: TrackerClient;

  before(async () => {
    dir = canaryDir("drift");
    flag = join(dir, "slow");
    const slow = buildCanary(dir, "slow", SLOW_CANARY, [`-DSLOW_FLAG=${JSON.stringify(flag)}`]);
    // A bound of 3 (the default is 1.25): this VM's timings wander by tens of per cent, the slow library by 20× and more.
    tracker = await startTrackerProcess(["--metrics-port", "0", "--max-canary-drift", "3"]);
    agent = await startAgentProcess(tracker.address, [`cpu:key=drift,name=slow,canary=${slow}`], ["--canary-interval-ms", "100", "--name", "d"]);
    client = await connectTracker(tracker.address);
  });
  after(() => stopAll(client, agent, tracker, dir));

  const board = async () => (await client.summary({ healthHistory: true })).boards.find((b) => b.id === "d/slow");

  it("a board whose canary turns slower than its baseline goes suspect with the figures, and healthy when it is fast again", async () => {
    const learned = await waitFor("the canary's baseline learned", async () => {
      const b = await board();
      return b && b.canary_baseline_ns > 0 ? b : undefined;
    });
    assert.equal(learned.health, "healthy");
    assert.equal(learned.canary_baseline_runs, 5);
    assert.ok(learned.canary_drift > 0 && learned.canary_drift < 3, `drift ${learned.canary_drift} while fast`);
    assert.ok(learned.canary_timings.length >= 5 && learned.canary_timings.every((t) => t.kernel_ns > 0 && t.at_ms > 0));
    // The kernel's time, not the worker's start (tens of ms): 4096 floats added in microseconds.
    assert.ok(learned.canary_baseline_ns < 1e6, `baseline ${learned.canary_baseline_ns} ns`);

    writeFileSync(flag, "");
    const slow = await waitFor("the slowed board suspect", async () => {
      const b = await board();
      return b?.health === "suspect" ? b : undefined;
    });
    const m = /^canary (\d+\.\d\d)× slower than its baseline: ([\d.]+ [nµm]?s) against ([\d.]+ [nµm]?s)$/.exec(slow.health_reason);
    assert.ok(m, `the reason names the figures: ${slow.health_reason}`);
    assert.ok(Number(m[1]) > 3);
    assert.equal(slow.state, "free", "a slow board is still granted: its answers are right");
    assert.ok(slow.canary_drift > 3);
    assert.equal(slow.last_error, "", "a slow canary is no failure");
    assert.deepEqual(
      slow.health_history.map((c) => [c.from, c.to]),
      [["healthy", "suspect"]],
    );

    // The same in `kfarm status` and the metrics.
    const status = await runCli(["status", "--tracker", tracker.address, "--history", "--width", "0"]);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /d\/slow .*suspect: canary \d+\.\d\d× slower than its baseline: .* \(\d+\.\d\d×\)/);
    assert.match(status.stdout, /Canary Times[\s\S]*d\/slow +[\d.]+ [nµm]?s +[\d.]+ [nµm]?s +\d+\.\d\d×/);
    const metrics = await scrape(tracker.httpAddress!);
    assert.equal(metrics.get("kernelfarm_board_health", { board: "d/slow", health: "suspect" }), 1);
    assert.ok(metrics.get("kernelfarm_board_canary_drift", { board: "d/slow" })! > 3);
    assert.ok(
      metrics.get("kernelfarm_board_canary_seconds", { board: "d/slow" })! > 3 * metrics.get("kernelfarm_board_canary_baseline_seconds", { board: "d/slow" })!,
    );

    unlinkSync(flag);
    const back = await waitFor("the board healthy again", async () => {
      const b = await board();
      return b?.health === "healthy" ? b : undefined;
    });
    assert.match(back.health_reason, /^canary back within 3× of its baseline: [\d.]+ [nµm]?s against [\d.]+ [nµm]?s$/);
    assert.ok(back.canary_drift < 3);
    assert.equal(back.canary_baseline_ns, learned.canary_baseline_ns, "the baseline stays what it was learned as");
  });
});
