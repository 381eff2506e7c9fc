/**
 * Board health with real processes: canaries run by each board's idle worker
 * (CPU and VTA simulator here; CUDA in tests/gpu),
 * a deliberately broken board (its canary library adds 1 to one element) that
 * quarantines itself and gets no sessions, an operator restore that its next
 * canaries undo, and an idle worker killed under a healthy board (an
 * infrastructure error) that the replacement's canary clears.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { connectTracker, type TrackerClient } from "../host-sdk/index.ts";
import { scrape } from "./helpers/metrics.ts";
import { startAgentProcess, startTrackerProcess, waitFor } from "./helpers/processes.ts";

const BROKEN_CANARY = `#include <stdint.h>
void kfarm_canary_vadd(const float* a, const float* b, float* c, int32_t n) {
  for (int32_t i = 0; i < n; i++) c[i] = a[i] + b[i] + (i == 3);
}
`;

describe("board health: canaries, quarantine, infrastructure errors", () => {
  let dir: string;
  let tracker: Awaited<ReturnType<typeof startTrackerProcess>>;
  let agent: Awaited<ReturnType<typeof startAgentProcess>>;
  let client: TrackerClient;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "kfarm-health-"));
    writeFileSync(join(dir, "broken.c"), BROKEN_CANARY);
    execFileSync("cc", ["-shared", "-fPIC", "-o", join(dir, "broken.so"), join(dir, "broken.c")]);
    tracker = await startTrackerProcess(["--metrics-port", "0"]);
    agent = await startAgentProcess(tracker.address, ["cpu:key=cpu,name=good", `cpu:key=cpu,name=bad,canary=${join(dir, "broken.so")}`, "vta-sim:key=vta,name=v"], ["--canary-interval-ms", "250", "--name", "h"]);
    client = await connectTracker(tracker.address);
  });
  after(async () => {
    client?.close();
    await agent?.stop();
    await tracker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

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
