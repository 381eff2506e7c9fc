/**
 * An agent killed without its clean-up (kill -9, with a session open)
 * leaves its scratch folder (users' modules in it), a session tmpfs, its
 * uid claims and a kernel's forked child running as a worker uid. The next
 * agent on the same work root finds and removes all of it, in one log line,
 * and can use the uids again — while a second agent, alive on the same
 * root, keeps its folder and its claims (docs/sandbox.md, "What a dead
 * agent leaves"). Real tracker and agents; root only (uids of their own,
 * tmpfs), skipping saying so elsewhere.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { compileCpu, connectTracker, type TrackerClient } from "../host-sdk/index.ts";
import { checkVadd } from "./helpers/kernels.ts";
import { startAgentProcess, startTrackerProcess, waitFor, waitForFreeBoards, type AgentProcess, type TrackerProcess } from "./helpers/processes.ts";

const NOT_ROOT = process.getuid?.() === 0 ? false : "needs root: only an agent running as root gives workers uids of their own and mounts session tmpfs";
const CLAIMS = "/run/kfarm-worker-uids";
/** Ranges of their own, so that other tests' agents on this host (the default range) never meet these. */
const DYING_UIDS = "62100-62103";
const LIVE_UIDS = "62200-62202";

const LEAVER = `
#include <signal.h>
#include <stdint.h>
#include <unistd.h>
/* Forks a child that sleeps for ever in a session of its own: it outlives its worker. out[0]: its pid. */
void leave_child(int32_t* out) {
  pid_t p = fork();
  if (p == 0) { setsid(); for (;;) pause(); }
  out[0] = (int32_t)p;
}
`;

/** Claims in the host's claims folder held by agent `pid`: uid → its file's text. */
function claimsOf(pid: number): number[] {
  const uids: number[] = [];
  for (const name of readdirSync(CLAIMS)) {
    try {
      if (Number(readFileSync(join(CLAIMS, name), "utf8").split(" ")[0]) === pid) uids.push(Number(name));
    } catch {
      // released meanwhile
    }
  }
  return uids.sort((a, b) => a - b);
}

/** Session tmpfs mounted under `dir`. */
function mountsUnder(dir: string): string[] {
  return readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .filter((l) => l.includes(" - tmpfs kfarm-session "))
    .map((l) => l.split(" ")[4]!)
    .filter((p) => p.startsWith(`${dir}/`));
}

/** Whether process `pid` runs (not gone, not a zombie waiting for its reaper). */
function running(pid: number): boolean {
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
  } catch {
    return false;
  }
}

function uidOf(pid: number): number {
  return Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]);
}

describe("what a dead agent leaves is cleaned by the next one on its work root", { skip: NOT_ROOT }, () => {
  let root: string;
  let tracker: TrackerProcess;
  let client: TrackerClient;
  const agents: AgentProcess[] = [];
  let child = 0;

  before(async () => {
    // The agents' TMPDIR: their scratch folders' parent. Workers run as other uids and must cross it.
    root = mkdtempSync(join(tmpdir(), "kfarm-leftovers-"));
    chmodSync(root, 0o755);
    tracker = await startTrackerProcess();
    client = await connectTracker(tracker.address);
  });
  after(async () => {
    client?.close();
    for (const a of agents) await a.stop();
    await tracker?.stop();
    if (child && running(child)) process.kill(child, "SIGKILL");
    if (root) rmSync(root, { recursive: true, force: true });
  });

  const agent = async (key: string, uids: string, log = "error") => {
    const a = await startAgentProcess(tracker.address, [`cpu:key=${key}`], ["--worker-uids", uids], { env: { TMPDIR: root, KFARM_LOG: log } });
    agents.push(a);
    return a;
  };

  it("removes the dead agent's scratch folder, tmpfs, claims and leftover processes, and leaves a live agent's alone", async () => {
    const dying = await agent("dying", DYING_UIDS);
    const live = await agent("live", LIVE_UIDS);
    await waitForFreeBoards(client, 2);
    const dyingDir = join(root, `kfarm-agent-${dying.proc.pid}`);
    const liveDir = join(root, `kfarm-agent-${live.proc.pid}`);

    // A session on the dying agent: its tmpfs, its worker's uid, a module in its store, a child that outlives the worker.
    const s = await client.request("dying", { deadlineMs: 10_000 });
    const leaver = await compileCpu(LEAVER, { functions: { leave_child: ["int32* out"] } });
    await s.upload(leaver);
    const out = await s.array({ shape: [1], dtype: "int32" });
    await (await s.loadModule(leaver.name)).getFunction("leave_child")(out);
    child = ((await out.toArray()) as Int32Array)[0]!;
    const uid = uidOf(child);
    assert.ok(mountsUnder(dyingDir).length > 0, "the session's tmpfs is mounted");
    assert.ok(claimsOf(dying.proc.pid!).includes(uid), `the dying agent claims uid ${uid}`);
    const liveClaims = claimsOf(live.proc.pid!);
    assert.ok(liveClaims.length > 0, "the live agent claims its warm worker's uid");

    const exited = once(dying.proc, "exit");
    dying.proc.kill("SIGKILL");
    await exited;
    // What it left, before the next agent comes.
    assert.ok(existsSync(dyingDir) && mountsUnder(dyingDir).length > 0 && claimsOf(dying.proc.pid!).length > 0 && running(child));

    const next = await agent("dying", DYING_UIDS, "warn");
    const line = await waitFor("the clean-up line", () =>
      next
        .stderr()
        .split("\n")
        .find((l) => l.includes("cleaned what agents that died left")),
    );
    assert.match(line, new RegExp(`removed 1 scratch folder\\(s\\) \\(${dyingDir}\\)`));
    assert.match(line, new RegExp(`released \\d+ worker uid claim\\(s\\) \\([0-9, ]*\\b${uid}\\b`));
    assert.equal(
      next
        .stderr()
        .split("\n")
        .filter((l) => l.includes("cleaned what agents")).length,
      1,
      "one line says it all",
    );

    assert.ok(!existsSync(dyingDir), "the dead agent's scratch folder is gone");
    assert.deepEqual(mountsUnder(dyingDir), []);
    assert.deepEqual(claimsOf(dying.proc.pid!), [], "none of its claims remain");
    assert.ok(!running(child), "the kernel's leftover child was killed");
    // The live agent's folder and claims are untouched.
    assert.ok(existsSync(join(liveDir, "agent.pid")), "the live agent's folder stays");
    assert.deepEqual(claimsOf(live.proc.pid!), liveClaims);

    // The uid is claimed again, by the new agent, whose board serves; so does the live agent's.
    await waitFor(`uid ${uid} claimed by the new agent`, () => claimsOf(next.proc.pid!).includes(uid));
    await waitForFreeBoards(client, 2);
    for (const key of ["dying", "live"]) {
      const t = await client.request(key, { deadlineMs: 10_000 });
      try {
        await checkVadd(t);
      } finally {
        await t.close();
      }
    }
  });
});
