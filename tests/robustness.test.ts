/**
 * Failures against the real thing: crashing and hanging kernels, killed and
 * frozen agents, killed workers and hosts, a restarted tracker. In each case
 * the host gets a clear reason and nothing else is lost.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import type { FarmError } from "../protos/index.ts";
import { connectTracker, type CompiledModule, type RemoteModule, type Session } from "../host-sdk/index.ts";
import { compileBad, compileVadd } from "./helpers/kernels.ts";
import { startAgentProcess, startFarm, startTrackerProcess, waitFor, waitForFreeBoards } from "./helpers/processes.ts";
import { refused } from "./helpers/assertions.ts";

/** Whether a `nap` call of an agent's session is running: it leaves "napping" in its session's folder (the agent's work root). */
function napping(agentPid: number): boolean {
  const root = join(tmpdir(), `kfarm-agent-${agentPid}`);
  return existsSync(root) && readdirSync(root).some((session) => existsSync(join(root, session, "napping")));
}

async function loaded(s: Session, m: CompiledModule): Promise<RemoteModule> {
  await s.upload(m);
  return s.loadModule(m.name);
}

describe("kernels that crash or hang", () => {
  let farm: Awaited<ReturnType<typeof startFarm>>;
  let bad: CompiledModule;
  let good: CompiledModule;

  before(async () => {
    [farm, bad, good] = await Promise.all([startFarm(["cpu:key=cpu,name=c0"], { agentArgs: ["--call-timeout-ms", "20000"] }), compileBad(), compileVadd()]);
  });
  after(() => farm.stop());

  async function expectBoardBackAndUsable(): Promise<void> {
    await waitForFreeBoards(farm.client, 1, "cpu");
    const s = await farm.client.request("cpu", { deadlineMs: 5000 });
    try {
      const mod = await loaded(s, good);
      const r = await s.array(new Float32Array([1, 2, 3]));
      await mod.getFunction("scale")(r, 3, 2);
      assert.deepEqual([...((await r.toArray()) as Float32Array)], [2, 4, 6]);
    } finally {
      await s.close();
    }
  }

  it("a segfault ends the session with RUNTIME_CRASH naming the signal; the board comes back", async () => {
    const s = await farm.client.request("cpu");
    const mod = await loaded(s, bad);
    await assert.rejects(mod.getFunction("segv")(0), (e: FarmError) => {
      assert.equal(e.code, "RUNTIME_CRASH");
      assert.match(e.message, /SIGSEGV/);
      return true;
    });
    assert.equal(s.closedReason?.code, "RUNTIME_CRASH");
    await assert.rejects(s.listdir(), (e: FarmError) => e.code === "RUNTIME_CRASH");
    await expectBoardBackAndUsable();
  });

  it("abort() ends the session with RUNTIME_CRASH (SIGABRT)", async () => {
    const s = await farm.client.request("cpu");
    const mod = await loaded(s, bad);
    await assert.rejects(mod.getFunction("die")(), (e: FarmError) => e.code === "RUNTIME_CRASH" && /SIGABRT/.test(e.message));
    await expectBoardBackAndUsable();
  });

  it("an endless loop is stopped at the call timeout with TIMEOUT; the board comes back", async () => {
    const s = await farm.client.request("cpu");
    const mod = await loaded(s, bad);
    const t0 = Date.now();
    await assert.rejects(mod.getFunction("spin").withOptions({ timeoutMs: 400 })(), (e: FarmError) => {
      assert.equal(e.code, "TIMEOUT");
      assert.match(e.message, /spin ran past its 400 ms timeout/);
      return true;
    });
    const took = Date.now() - t0;
    assert.ok(took >= 400 && took < 5000, `timeout took ${took} ms`);
    await expectBoardBackAndUsable();
  });

  it("the session timeout ends a long session with SESSION_TIMEOUT", async () => {
    const s = await farm.client.request("cpu", { sessionTimeoutMs: 700 });
    const mod = await loaded(s, bad);
    await assert.rejects(mod.getFunction("nap")(5000), (e: FarmError) => e.code === "SESSION_TIMEOUT" && /700 ms/.test(e.message));
    await expectBoardBackAndUsable();
  });

  it("a killed session worker gives RUNTIME_CRASH, the board comes back and the agent stays attached", async () => {
    const s = await farm.client.request("cpu");
    const pid = Number((await s.stats()).info.worker_pid);
    assert.ok(pid > 0 && pid !== farm.agent.proc.pid);
    process.kill(pid, "SIGKILL");
    await waitFor("the session to end", () => s.isClosed);
    assert.equal(s.closedReason?.code, "RUNTIME_CRASH");
    assert.match(s.closedReason!.message, /SIGKILL/);
    assert.equal(farm.agent.proc.exitCode, null, "the agent lives on");
    await expectBoardBackAndUsable();
  });

  it("a host killed mid-session gives its board back", async () => {
    const host = spawn(process.execPath, ["--import", "tsx", fileURLToPath(new URL("./fixtures/host-hold.ts", import.meta.url)), farm.tracker.address, "cpu"], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    host.stdout!.on("data", (c: Buffer) => (out += c));
    await waitFor("the host to hold its session", () => out.includes("holding"), 20_000);
    assert.equal((await farm.client.summary()).boards[0]!.state, "busy");
    host.kill("SIGKILL");
    await once(host, "exit");
    await expectBoardBackAndUsable();
  });
});

describe("agents that die, freeze or lose their tracker", () => {
  it("an agent killed mid-call: the host sees AGENT_LOST, the board leaves the pool, other sessions continue", async () => {
    const tracker = await startTrackerProcess();
    const [a, b] = await Promise.all([
      startAgentProcess(tracker.address, ["cpu:key=cpu,name=a,zone=a"], ["--name", "agent-a"]),
      startAgentProcess(tracker.address, ["cpu:key=cpu,name=b,zone=b"], ["--name", "agent-b"]),
    ]);
    const client = await connectTracker(tracker.address);
    try {
      await waitForFreeBoards(client, 2);
      const bad = await compileBad();
      const sa = await client.request("cpu", { labels: { zone: "a" } });
      const sb = await client.request("cpu", { labels: { zone: "b" } });
      const napA = (await loaded(sa, bad)).getFunction("nap");
      const napB = (await loaded(sb, bad)).getFunction("nap");
      const callA = napA(10_000);
      const callB = napB(300);
      await waitFor("agent-a's call running", () => napping(a.proc.pid!), 10_000);
      const t0 = Date.now();
      a.proc.kill("SIGKILL");
      await assert.rejects(callA, (e: FarmError) => e.code === "AGENT_LOST" && /agent-a/.test(e.message));
      assert.ok(Date.now() - t0 < 3000, `AGENT_LOST took ${Date.now() - t0} ms`);
      await callB; // the other agent's session is untouched
      await sb.listdir();
      await sb.close();
      const s = await client.summary();
      assert.deepEqual(
        s.boards.map((x) => x.id),
        ["agent-b/b"],
      );
      assert.deepEqual(
        s.agents.map((x) => x.name),
        ["agent-b"],
      );
    } finally {
      client.close();
      await Promise.all([a.stop(), b.stop()]);
      await tracker.stop();
    }
  });

  it("a frozen agent (SIGSTOP) stops being granted within 3 s and comes back after SIGCONT", async () => {
    const tracker = await startTrackerProcess();
    const agent = await startAgentProcess(tracker.address, ["cpu:key=cpu,name=f"], ["--name", "frozen"]);
    const client = await connectTracker(tracker.address);
    try {
      await waitForFreeBoards(client, 1);
      const s = await client.request("cpu");
      const t0 = Date.now();
      agent.proc.kill("SIGSTOP");
      await waitFor("the frozen agent's board to leave the pool", async () => (await client.summary()).boards.length === 0, 5000);
      const gone = Date.now() - t0;
      assert.ok(gone <= 3000, `the board left after ${gone} ms`);
      await waitFor("the session on it to end", () => s.isClosed, 2000);
      assert.equal(s.closedReason?.code, "AGENT_LOST");
      // Its key was served a moment ago: a request waits for its board (TVM's users expect requests to wait), up to its deadline.
      const late = await refused(client.request("cpu", { deadlineMs: 200 }), "DEADLINE_EXCEEDED");
      assert.match(late.message, /no board of key "cpu" came back within the request's deadline of 200 ms: none is attached, the last left \d+\.\d s ago/);
      const waiting = client.request("cpu", { deadlineMs: 20_000 });
      await waitFor("the request waiting in the queue", async () => (await client.summary()).queues.some((q) => q.key === "cpu" && q.pending === 1));
      // A key no board has served fails at once unless the request gives a deadline of its own to wait for one.
      await refused(client.request("tpu"), "NO_BOARD");
      agent.proc.kill("SIGCONT");
      const back = await waiting;
      assert.equal(back.board.id, "frozen/f");
      await back.close();
      await waitForFreeBoards(client, 1, "cpu", 10_000);
    } finally {
      agent.proc.kill("SIGCONT");
      client.close();
      await agent.stop();
      await tracker.stop();
    }
  });

  it("agents re-attach within 1 s of a restarted tracker listening again", async () => {
    const first = await startTrackerProcess();
    const agent = await startAgentProcess(first.address, ["cpu:key=cpu,name=r"], ["--name", "survivor"], { env: { KFARM_LOG: "warn" } });
    let second: Awaited<ReturnType<typeof startTrackerProcess>> | undefined;
    try {
      const c1 = await connectTracker(first.address);
      await waitForFreeBoards(c1, 1);
      c1.close();
      await first.stop("SIGKILL");
      // In backoff: it lost the tracker, and a re-dial has failed since (each doubles the wait, up to its cap).
      await waitFor(
        "the agent in backoff",
        () => /lost the tracker at[^\n]*\n(.*\n)*.*cannot attach to the tracker at .*ECONNREFUSED/.test(agent.stderr()),
        5000,
      );
      second = await startTrackerProcess([], first.port);
      const listening = Date.now();
      const c2 = await connectTracker(second.address);
      await waitFor("the agent to re-register", async () => (await c2.summary()).boards.some((b) => b.id === "survivor/r"), 5000, 10);
      const took = Date.now() - listening;
      assert.ok(took <= 1000, `re-attached ${took} ms after the tracker listened`);
      await waitForFreeBoards(c2, 1);
      const s = await c2.request("cpu");
      await s.listdir();
      await s.close();
      c2.close();
    } finally {
      await agent.stop();
      await second?.stop();
    }
  });
});
