/**
 * The README's host script runs as written, importing from "kernelfarm", and
 * its output is the user's: the embedded farm's logs stay off stdout, and on
 * stderr below warn unless KFARM_LOG asks. The tuning examples' wait for
 * their boards works without a GPU, and a farm with no board of the kind an
 * example needs is refused at once, saying what the farm has.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { it } from "node:test";
import { boardsOf } from "../examples/lib/boards.ts";
import { connectTracker } from "../host-sdk/index.ts";
import type { FarmError } from "../protos/index.ts";
import { startAgentProcess, startFarm, startTrackerProcess, waitFor } from "./helpers/processes.ts";

const run = promisify(execFile);
const example = (name: string) => fileURLToPath(new URL(`../examples/${name}`, import.meta.url));
/** The environment a user's shell gives: no KFARM_LOG of the test's. */
const { KFARM_LOG: _testLevel, ...USER_ENV } = process.env;

/** The JSON log lines in `text`, parsed. */
function logLines(text: string): Array<{ level: number; component?: string; msg: string }> {
  return text
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as { level: number; component?: string; msg: string });
}

it("examples/vadd.ts runs on an embedded farm and gets the right answer; stdout is the user's, the farm logs only warnings unless asked", async () => {
  const { stdout, stderr } = await run(process.execPath, ["--import", "tsx", example("vadd.ts")], { env: USER_ENV, timeout: 60_000 });
  assert.match(stdout, /c\[12345\] = 12346 \(expected 12346\)/);
  assert.match(stdout, /mean \(ms\)\s+median \(ms\)/);
  assert.deepEqual(logLines(stdout), [], "no log line on stdout");
  assert.deepEqual(
    logLines(stderr).filter((l) => l.level < 40),
    [],
    "nothing below warn on stderr",
  );

  const asked = await run(process.execPath, ["--import", "tsx", example("vadd.ts")], { env: { ...USER_ENV, KFARM_LOG: "info" }, timeout: 60_000 });
  assert.deepEqual(logLines(asked.stdout), [], "no log line on stdout, even when asked for");
  const components = new Set(logLines(asked.stderr).map((l) => l.component));
  assert.ok(components.has("tracker") && components.has("agent"), `KFARM_LOG=info: the tracker's and the agent's info lines on stderr\n${asked.stderr}`);
  assert.ok(
    logLines(asked.stderr).some((l) => l.level === 30 && l.msg === "tracker listening"),
    asked.stderr,
  );
});

it("the tuning examples refuse at once a farm with no board of the kind they need, naming what it has and what to do", async () => {
  const farm = await startFarm(["cpu:key=cpu,name=c0", "vta-sim:key=sim,name=v0"]);
  const address = farm.tracker.address;
  const refused = async (script: string, args: string[], why: RegExp) => {
    const t0 = Date.now();
    const e = await run(process.execPath, ["--import", "tsx", example(script), "--tracker", address, ...args], { env: USER_ENV, timeout: 60_000 }).then(
      () => assert.fail(`${script} ${args.join(" ")} ran on a farm without its boards`),
      (err: { code: number; stderr: string }) => err,
    );
    const seconds = (Date.now() - t0) / 1000;
    assert.equal(e.code, 1, e.stderr);
    assert.match(e.stderr.trim(), why);
    assert.equal(e.stderr.trim().split("\n").length, 1, `one line, no stack trace:\n${e.stderr}`);
    // At once: not after a request's deadline (30 s) or measure()'s wait for boards (60 s); the rest is tsx starting the script.
    assert.ok(seconds < 20, `${script} took ${seconds} s to refuse`);
  };
  const at = address.replace(/\./g, "\\.");
  try {
    await refused(
      "tune-cuda-gemm.ts",
      ["--key", "cuda"],
      new RegExp(
        `^no cuda board of key "cuda" at ${at}: it serves cpu \\(1 cpu board\\), sim \\(1 vta-sim board\\); add one with \`kfarm agent --tracker ${at} --board cuda:all:key=cuda\` on a host that has one \\[NO_BOARD\\]$`,
      ),
    );
    await refused(
      "tune-cuda-conv2d.ts",
      ["--key", "cpu"],
      /^no cuda board of key "cpu" at [\d.:]+: that key has 1 cpu board; add one with .*--board cuda:all:key=cpu` .*\[NO_BOARD\]$/,
    );
    await refused(
      "tune-vta-conv2d.ts",
      [],
      /^no vta-sim or vta board of key "vta" at [\d.:]+: it serves cpu .*; its vta-sim or vta boards have key sim: run with --key sim \[NO_BOARD\]$/,
    );
  } finally {
    await farm.stop();
  }
});

it("examples/lib/boards.ts waits, with a request's deadline, for an agent started just after the script; with boards attached, a key none serves is refused at once", async () => {
  const tracker = await startTrackerProcess();
  const client = await connectTracker(tracker.address);
  let agent: Awaited<ReturnType<typeof startAgentProcess>> | undefined;
  try {
    // No board at all, and none comes: the tracker's answer at the deadline says so.
    await assert.rejects(
      boardsOf(client, "never", { kinds: ["cpu"], waitMs: 300 }),
      (e: FarmError) => e.code === "DEADLINE_EXCEEDED" && /no board serves key "never"; keys served: \(none: no agent is attached\)/.test(e.message),
    );
    const boards = boardsOf(client, "late", { kinds: ["cpu"], waitMs: 20_000 });
    await waitFor("the example's request waiting in the queue", async () => (await client.summary()).queues.some((q) => q.key === "late" && q.pending === 1));
    agent = await startAgentProcess(tracker.address, ["cpu:key=late,name=l0", "cpu:key=late,name=l1"], ["--name", "ex"]);
    const found = await boards;
    assert.ok(found.length >= 1 && found.every((b) => b.key === "late" && b.id.startsWith("ex/")), JSON.stringify(found.map((b) => b.id)));
    // Boards attached, none of the key: waiting would not bring one.
    const t0 = Date.now();
    await assert.rejects(
      boardsOf(client, "never", { kinds: ["cpu"], waitMs: 20_000 }),
      (e: FarmError) =>
        e.code === "NO_BOARD" &&
        /^no cpu board of key "never" at [\d.:]+: it serves late \([12] cpu boards?\); its cpu boards have key late: run with --key late$/.test(e.message),
    );
    assert.ok(Date.now() - t0 < 5000, "refused at once, not at the deadline");
  } finally {
    client.close();
    await agent?.stop();
    await tracker.stop();
  }
});
