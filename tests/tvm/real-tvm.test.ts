/**
 * The same scenarios with Apache TVM itself, where it is found
 * (tests/helpers/tvm.ts: KFARM_TVM_HOME, which .ci/run sets): TVM's rpc_server
 * registers with kernelfarm's TVM port, TVM's client requests it and runs a
 * session on it, query_rpc_tracker prints the farm, and the lease returns.
 * Without TVM the suite is skipped, saying so in the summary.
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { after, before, describe, it } from "node:test";
import { connectTracker, type TrackerClient } from "../../host-sdk/index.ts";
import { freePort, startTrackerProcess, waitFor, type TrackerProcess } from "../helpers/processes.ts";
import { PYTHON, tvmEnv, tvmMissing } from "../helpers/tvm.ts";
import { splitAddress } from "./fake-tvm.ts";

/** Runs a Python snippet to its end; its output. */
function python(code: string, timeoutMs = 60_000): Promise<{ code: number | null; out: string }> {
  const child = spawn(PYTHON, ["-c", code], { stdio: ["ignore", "pipe", "pipe"], env: tvmEnv() });
  let out = "";
  child.stdout.on("data", (c: Buffer) => (out += c.toString()));
  child.stderr.on("data", (c: Buffer) => (out += c.toString()));
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  return new Promise((resolve) =>
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    }),
  );
}

/** Why the suite cannot run here (each test is skipped with it, so the summary counts them), or false. */
const MISSING = tvmMissing();

describe("Apache TVM's own rpc_server, client and query_rpc_tracker against kernelfarm's TVM port", () => {
  let tracker: TrackerProcess;
  let client: TrackerClient;
  let server: ChildProcess;
  let serverPort: number;
  let tvm: { host: string; port: number };

  before(async () => {
    if (MISSING) return;
    tracker = await startTrackerProcess(["--tvm-port", "0"]);
    client = await connectTracker(tracker.address);
    tvm = splitAddress(tracker.tvmAddress!);
    serverPort = await freePort();
    server = spawn(
      PYTHON,
      [
        "-m",
        "tvm.exec.rpc_server",
        "--host",
        "127.0.0.1",
        "--port",
        String(serverPort),
        "--port-end",
        String(serverPort + 1),
        "--tracker",
        tracker.tvmAddress!,
        "--key",
        "real-cpu",
      ],
      { stdio: "ignore", env: tvmEnv() },
    );
    await waitFor(
      "TVM's rpc_server registered and free",
      async () => (await client.summary()).boards.some((b) => b.kind === "tvm-rpc" && b.key === "real-cpu" && b.state === "free"),
      60_000,
    );
  });
  after(async () => {
    server?.kill("SIGTERM");
    client?.close();
    await tracker?.stop();
  });

  it("TVM's client requests the server, runs a session on it, and the lease returns", { skip: MISSING }, async () => {
    const run = await python(`
import numpy as np
from tvm import rpc
t = rpc.connect_tracker("${tvm.host}", ${tvm.port})
remote = t.request("real-cpu", priority=1, session_timeout=60)
a = remote.cpu(0)
x = __import__("tvm").nd.array(np.arange(8, dtype="float32"), a)
print("sum", float(x.numpy().sum()))
`);
    assert.equal(run.code, 0, run.out);
    assert.match(run.out, /sum 28\.0/);
    await waitFor(
      "the board free again (the server put itself back)",
      async () => (await client.summary()).boards.some((b) => b.key === "real-cpu" && b.state === "free"),
      30_000,
    );
  });

  it("query_rpc_tracker prints the server and its queue", { skip: MISSING }, async () => {
    const run = await python(
      `import sys; sys.argv = ["q", "--host", "${tvm.host}", "--port", "${tvm.port}"]; import runpy; runpy.run_module("tvm.exec.query_rpc_tracker", run_name="__main__")`,
    );
    assert.equal(run.code, 0, run.out);
    assert.match(run.out, new RegExp(`127\\.0\\.0\\.1:${serverPort}\\s+server:real-cpu`));
    assert.match(run.out, /real-cpu\s+1\s+1\s+0/);
  });

  it("a request for a key nobody serves fails at once with the tracker's reason", { skip: MISSING }, async () => {
    const run = await python(`
from tvm import rpc
t = rpc.connect_tracker("${tvm.host}", ${tvm.port})
try:
    t.request("nobody-serves-this", max_retry=1)
except RuntimeError as err:
    print("refused:", err)
`);
    assert.equal(run.code, 0, run.out);
    assert.match(run.out, /refused:.*NO_BOARD.*no TVM server serves key "nobody-serves-this"/);
  });
});
