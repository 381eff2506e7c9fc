/**
 * The agent bundle (deploy/agent-bundle/build.ts) as a GPU host runs it: staged
 * without compression into a temp folder, then run with a PATH whose only
 * program is `sh`, so nothing but the bundled node can run kernelfarm. A
 * tracker and an agent from the bundle serve a real CPU session, and the agent
 * and its session workers are checked to be the bundled node.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import { chmod, mkdir, mkdtemp, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { after, before, describe, it } from "./helpers/suites.ts";
import { bundleRefusal, APP_DIR_NAME, BUNDLE_DIR_NAME, BUNDLE_INFO_FILE } from "../deploy/agent-bundle/build.ts";
import { connectTracker } from "../host-sdk/index.ts";
import { checkVadd } from "./helpers/kernels.ts";
import { startProgram, waitFor, waitForFreeBoards, type FarmProcess } from "./helpers/processes.ts";
import { childrenOf, cmdlineOf, exeOf } from "./helpers/procfs.ts";

const run = promisify(execFile);
const BUILD = fileURLToPath(new URL("../deploy/agent-bundle/build.ts", import.meta.url));
const READY_TIMEOUT_MS = 30_000;

const refusal = bundleRefusal();

describe("agent bundle", { skip: refusal }, () => {
  let tmp: string;
  let stage: string;
  let env: NodeJS.ProcessEnv;

  before(async () => {
    tmp = await mkdtemp(join(tmpdir(), "kf-bundle-"));
    // Installed where others can read it, as under /opt: an agent running as root starts its workers as
    // other users (docs/sandbox.md), which must read the bundle (mkdtemp makes the folder 0700).
    await chmod(tmp, 0o755);
    const { stdout } = await run(process.execPath, ["--import", "tsx", BUILD, "--no-compress", "--out", join(tmp, "kfarm-agent-linux-x64.tar.xz")], {
      timeout: 120_000,
    });
    assert.match(stdout, /stage\s+[\d.]+ MiB\s+\d+ files/);
    stage = join(tmp, BUNDLE_DIR_NAME);
    // A PATH with `sh` and nothing else: no node anywhere on it.
    const bin = join(tmp, "bin");
    await mkdir(bin);
    await symlink("/bin/sh", join(bin, "sh"));
    env = { PATH: bin, HOME: tmp, KFARM_LOG: "error" };
  });

  after(async () => {
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it("holds the launchers, the node that built it and only the linux-x64 production packages", () => {
    for (const f of ["node", "kfarm", "test-gpu", "bench"]) assert.ok(statSync(join(stage, f)).mode & 0o100, `${f} is executable`);
    const info = JSON.parse(readFileSync(join(stage, BUNDLE_INFO_FILE), "utf8")) as { node: string; dependencies: Record<string, string> };
    assert.equal(info.node, process.version);
    const modules = join(stage, APP_DIR_NAME, "node_modules");
    for (const present of [
      "tsx",
      "esbuild",
      "@esbuild/linux-x64/bin/esbuild",
      "koffi",
      "@koromix/koffi-linux-x64",
      "@msgpackr-extract/msgpackr-extract-linux-x64",
      "@grpc/grpc-js",
    ]) {
      assert.ok(existsSync(join(modules, present)), `${present} is in the bundle`);
    }
    for (const absent of ["typescript", "@types"]) assert.ok(!existsSync(join(modules, absent)), `${absent} is not in the bundle`);
    assert.deepEqual(readdirSync(join(modules, "@esbuild")), ["linux-x64"]);
    assert.ok(existsSync(join(stage, APP_DIR_NAME, "tests", "agent-bundle.test.ts")), "tests come along");
    assert.ok(!existsSync(join(modules, "pino", "README.md")) && !existsSync(join(modules, "yaml", "dist", "index.d.ts")), "docs and types are pruned");
  });

  it("kfarm --help and bench --list run on the bundled node with no node on PATH", async () => {
    await assert.rejects(run("sh", ["-c", "command -v node"], { env }), "no node on the test PATH");
    const help = await run(join(stage, "kfarm"), ["--help"], { env, cwd: tmp, timeout: 60_000 });
    assert.match(help.stdout, /Usage: kfarm/);
    // `--import tsx` resolves from the bundle's app folder, where the launcher runs it.
    const bench = await run(join(stage, "bench"), ["--list"], { env, cwd: tmp, timeout: 60_000 });
    assert.match(bench.stdout, /^grant\s/m);
  });

  it("a tracker and an agent from the bundle serve a CPU session; the agent and its workers are the bundled node", async () => {
    const bundledNode = realpathSync(join(stage, "node"));
    let tracker: FarmProcess | undefined;
    let agentProcess: FarmProcess | undefined;
    const client = { close: () => {} };
    try {
      const t = await startProgram(join(stage, "kfarm"), ["tracker", "--port", "0"], {
        env,
        ready: /listening on (\S+):(\d+)/,
        what: "the bundle's tracker",
        timeoutMs: READY_TIMEOUT_MS,
      });
      tracker = t;
      const address = `${t.match[1]}:${t.match[2]}`;
      agentProcess = await startProgram(join(stage, "kfarm"), ["agent", "--tracker", address, "--board", "cpu:key=cpu"], {
        env,
        ready: /kfarm agent .* serving/,
        what: "the bundle's agent",
        timeoutMs: READY_TIMEOUT_MS,
      });
      const agent = agentProcess.proc;

      // The launcher execs node: the agent's process is the bundled binary, and so are the workers it forks.
      assert.equal(exeOf(agent.pid!), bundledNode);
      // (The agent's other child is tsx's esbuild service.) Workers run the agent's
      // worker bundle (device-agent/agent/worker-entry.ts), written inside the bundle's app.
      const workerBundle = join(realpathSync(stage), APP_DIR_NAME, "node_modules", ".cache", "kernelfarm", "worker-");
      const workers = await waitFor("a session worker", () => {
        const kids = childrenOf(agent!.pid!).filter((pid) => cmdlineOf(pid).includes("kernelfarm/worker-"));
        return kids.length > 0 ? kids : undefined;
      });
      for (const w of workers) {
        assert.equal(exeOf(w), bundledNode);
        assert.ok(cmdlineOf(w).includes(workerBundle), `worker ${w} runs ${cmdlineOf(w)}, not a bundle under ${workerBundle}`);
      }

      const tc = await connectTracker(address);
      client.close = () => tc.close();
      await waitForFreeBoards(tc, 1, "cpu");
      const status = await run(join(stage, "kfarm"), ["status", "--tracker", address, "--json"], { env, cwd: tmp, timeout: 60_000 });
      const summary = JSON.parse(status.stdout) as { boards: Array<{ key: string; state: string }> };
      assert.deepEqual(
        summary.boards.map((b) => [b.key, b.state]),
        [["cpu", "free"]],
      );

      // A real session: the worker loads the kernel through the bundle's koffi.
      const s = await tc.request("cpu", { deadlineMs: 20_000 });
      try {
        await checkVadd(s, 1000);
      } finally {
        await s.close();
      }
    } finally {
      client.close();
      await agentProcess?.stop();
      await tracker?.stop();
    }
  });
});
