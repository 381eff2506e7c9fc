/**
 * kernelfarm boards that serve TVM clients (docs/tvm-boards.md): a tracker
 * with its TVM port, an agent with a `tvm` board (Apache TVM's runtime behind
 * the agent), and Apache TVM's own client — `connect_tracker(...).request(K)`,
 * `upload`, `load_module`, a call on `tvm.nd` arrays, `time_evaluator`, and
 * autotvm's `run_through_rpc` — against it, all as real processes. The module
 * is a hand-built shared object in TVM's packed-function C convention (what
 * TVM's compiler emits for a host function; the runtime-only TVM here has no
 * compiler). Without TVM (tests/helpers/tvm.ts) the suite is skipped, saying why.
 */
import assert from "node:assert/strict";
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { connectTracker, type TrackerClient } from "../../host-sdk/index.ts";
import { runCli, startAgentProcess, startTrackerProcess, waitFor, type AgentProcess, type TrackerProcess } from "../helpers/processes.ts";
import { childrenOf, cmdlineOf } from "../helpers/procfs.ts";
import { PYTHON, tvmEnv, tvmMissing } from "../helpers/tvm.ts";
import { splitAddress } from "./fake-tvm.ts";

const MISSING = tvmMissing();
const KEY = "tvm-board";

/**
 * c = a + b over float32 arrays, in TVM's packed-function convention: TVM's
 * runtime finds `vadd` by name (dlsym) and hands it DLTensors; `__tvm_main__`
 * names the entry autotvm's runner times (Module.entry_name).
 */
const MODULE_SOURCE = `#include <stdint.h>
typedef union { int64_t v_int64; double v_float64; void* v_handle; const char* v_str; } TVMValue;
typedef struct { int32_t device_type; int32_t device_id; } DLDevice;
typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } DLDataType;
typedef struct { void* data; DLDevice device; int32_t ndim; DLDataType dtype; int64_t* shape; int64_t* strides; uint64_t byte_offset; } DLTensor;
void TVMAPISetLastError(const char* msg);
const char __tvm_main__[] = "vadd";
static float* at(DLTensor* t) { return (float*)((char*)t->data + t->byte_offset); }
int vadd(TVMValue* args, int* codes, int n, TVMValue* ret, int* ret_code, void* resource) {
  if (n != 3) { TVMAPISetLastError("vadd takes three arrays: a, b, c"); return -1; }
  DLTensor* a = (DLTensor*)args[0].v_handle;
  DLTensor* b = (DLTensor*)args[1].v_handle;
  DLTensor* c = (DLTensor*)args[2].v_handle;
  int64_t len = 1;
  for (int32_t i = 0; i < a->ndim; i++) len *= a->shape[i];
  float *pa = at(a), *pb = at(b), *pc = at(c);
  for (int64_t i = 0; i < len; i++) pc[i] = pa[i] + pb[i];
  return 0;
}
`;

/** A Python child that imports TVM, its output collected. */
function python(code: string): { child: ChildProcess; done: Promise<{ code: number | null; out: string }>; output: () => string } {
  // stdin: a script that waits for the test reads a line from it.
  const child = spawn(PYTHON, ["-c", code], { stdio: ["pipe", "pipe", "pipe"], env: tvmEnv() });
  let out = "";
  child.stdout!.on("data", (c: Buffer) => (out += c.toString()));
  child.stderr!.on("data", (c: Buffer) => (out += c.toString()));
  const timer = setTimeout(() => child.kill("SIGKILL"), 90_000);
  const done = new Promise<{ code: number | null; out: string }>((resolve) =>
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    }),
  );
  return { child, done, output: () => out };
}

describe("a kernelfarm tvm board serves Apache TVM's own client on the tracker's TVM port", () => {
  let tracker: TrackerProcess;
  let agent: AgentProcess;
  let client: TrackerClient;
  let tvm: { host: string; port: number };
  let dir: string;
  let module: string;

  const board = async () => (await client.summary()).boards.find((b) => b.key === KEY);
  const freeAgain = (what: string) => waitFor(what, async () => (await board())?.state === "free", 30_000);
  const prelude = () => `
import numpy as np, tvm
from tvm import rpc
t = rpc.connect_tracker("${tvm.host}", ${tvm.port})
`;

  before(async () => {
    if (MISSING) return;
    dir = mkdtempSync(join(tmpdir(), "kfarm-tvm-board-"));
    writeFileSync(join(dir, "vadd.c"), MODULE_SOURCE);
    module = join(dir, "vadd.so");
    execFileSync("cc", ["-shared", "-fPIC", "-O2", "-o", module, join(dir, "vadd.c")]);
    // What TVM's export_library("x.tar") writes: the module's object files, linked on the board by load_module.
    execFileSync("cc", ["-c", "-fPIC", "-O2", "-o", join(dir, "vadd.o"), join(dir, "vadd.c")]);
    execFileSync("tar", ["cf", join(dir, "vadd.tar"), "-C", dir, "vadd.o"]);
    tracker = await startTrackerProcess(["--tvm-port", "0"]);
    tvm = splitAddress(tracker.tvmAddress!);
    agent = await startAgentProcess(tracker.address, [`tvm:key=${KEY},name=t0`], [], { env: tvmEnv() as Record<string, string> });
    client = await connectTracker(tracker.address);
    await freeAgain("the tvm board free");
  });
  after(async () => {
    client?.close();
    await agent?.stop();
    await tracker?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("registers as kind tvm with TVM's version, its canary run through TVM's runtime", { skip: MISSING }, async () => {
    const b = (await board())!;
    assert.equal(b.kind, "tvm");
    assert.match(b.capabilities.tvm_version ?? "", /^\d+\.\d+/);
    await waitFor("the board's first canary", async () => (await board())?.last_canary, 30_000);
    const after = (await board())!;
    assert.match(after.last_canary, /vector add .* through TVM's runtime/);
    assert.equal(after.health, "healthy", after.health_reason);
  });

  it("the next session's TVM server waits while the board is idle, TVM's runtime loaded: a session pays no Python start", { skip: MISSING }, async () => {
    await freeAgain("the tvm board free");
    const ready = await waitFor(
      "a Python child of the idle worker with TVM's runtime mapped",
      () =>
        descendantsOf(agent.proc.pid!).find(
          (pid) => cmdlineOf(pid).includes("recv_fds") && readMaps(pid).includes("libtvm_runtime.so") && !readMaps(pid).includes(" (deleted)\n"),
        ),
      30_000,
    );
    assert.ok(ready > 0);
  });

  it("query_rpc_tracker lists the board as a free server of its key", { skip: MISSING }, async () => {
    const run = python(
      `import sys; sys.argv = ["q", "--host", "${tvm.host}", "--port", "${tvm.port}"]; import runpy; runpy.run_module("tvm.exec.query_rpc_tracker", run_name="__main__")`,
    );
    const { code, out } = await run.done;
    assert.equal(code, 0, out);
    assert.match(out, new RegExp(`127\\.0\\.0\\.1:\\d+\\s+server:${KEY}`));
    assert.match(out, new RegExp(`${KEY}\\s+1\\s+1\\s+0`));
  });

  it("a TVM client requests the key, uploads a module, loads, calls and times it; the lease returns", { skip: MISSING }, async () => {
    const run = python(`${prelude()}
remote = t.request("${KEY}", priority=1, session_timeout=60)
remote.upload("${module}")
m = remote.load_module("vadd.so")
dev = remote.cpu(0)
a = tvm.nd.array(np.arange(1024, dtype="float32"), dev)
b = tvm.nd.array(np.full(1024, 2.5, dtype="float32"), dev)
c = tvm.nd.empty((1024,), "float32", dev)
m["vadd"](a, b, c)
assert np.array_equal(c.numpy(), np.arange(1024, dtype="float32") + np.float32(2.5)), c.numpy()[:8]
r = m.time_evaluator("vadd", dev, number=20, repeat=3)(a, b, c)
print("timed", len(r.results), r.mean > 0)
`);
    const { code, out } = await run.done;
    assert.equal(code, 0, out);
    assert.match(out, /timed 3 True/);
    await freeAgain("the board free again after the TVM session");
  });

  it("a module exported as a .tar is linked and loaded on the board, as TVM's rpc_server does", { skip: MISSING }, async () => {
    const run = python(`${prelude()}
remote = t.request("${KEY}", priority=1, session_timeout=60)
remote.upload("${dir}/vadd.tar")
m = remote.load_module("vadd.tar")
dev = remote.cpu(0)
a = tvm.nd.array(np.arange(16, dtype="float32"), dev)
c = tvm.nd.empty((16,), "float32", dev)
m["vadd"](a, a, c)
print("tar", c.numpy().tolist() == [2.0 * i for i in range(16)])
`);
    const { code, out } = await run.done;
    assert.equal(code, 0, out);
    assert.match(out, /tar True/);
    await freeAgain("the board free after the .tar session");
  });

  it("a TVM client killed mid-session ends its lease; the board serves the next one", { skip: MISSING }, async () => {
    const run = python(`${prelude()}
remote = t.request("${KEY}", priority=1)
remote.upload("${module}")
m = remote.load_module("vadd.so")
print("loaded", flush=True)
import time
time.sleep(600)
`);
    await waitFor("the client's module loaded", () => /loaded/.test(run.output()), 60_000);
    const held = (await board())!;
    assert.equal(held.state, "busy");
    assert.equal(held.session_lane, "tvm");
    run.child.kill("SIGKILL");
    await run.done;
    await freeAgain("the board free after its client was killed");
    const next = python(`${prelude()}
remote = t.request("${KEY}", priority=1)
print("next", remote.cpu(0).exist)
`);
    const { code, out } = await next.done;
    assert.equal(code, 0, out);
    assert.match(out, /next True/);
  });

  it("a wrong match key is refused with TVM's mismatch; the board serves the right one", { skip: MISSING }, async () => {
    const run = python(`${prelude()}
from tvm.rpc import base
# The tracker's answer itself, as TVM's client reads it: [0, [host, port, matchkey]].
base.sendjson(t._sock, [base.TrackerCode.REQUEST, "${KEY}", "", 1])
ok, (host, port, matchkey) = base.recvjson(t._sock)
assert ok == 0
session, ticket = matchkey.split(":")
for wrong in (session + ":" + ("0" * len(ticket)), "s999-000000:" + ticket, "${KEY}:1234"):
    try:
        rpc.connect(host, port, key=wrong)
        print("accepted", wrong)
    except Exception as err:
        print("refused", "matches key" in str(err))
remote = rpc.connect(host, port, key=matchkey)
print("served", remote.cpu(0).exist)
try:
    rpc.connect(host, port, key=matchkey)
    print("second lane accepted")
except Exception as err:
    print("second lane refused")
`);
    const { code, out } = await run.done;
    assert.equal(code, 0, out);
    assert.equal((out.match(/^refused True$/gm) ?? []).length, 3, out);
    assert.doesNotMatch(out, /accepted/);
    assert.match(out, /served True/);
    assert.match(out, /second lane refused/);
    await freeAgain("the board free after the session with the right key");
  });

  it("the client's session_timeout ends the session as TVM's server does, and the lease with it", { skip: MISSING }, async () => {
    const run = python(`${prelude()}
import time
import sys
remote = t.request("${KEY}", priority=1, session_timeout=2)
print("connected", remote.cpu(0).exist, flush=True)
sys.stdin.readline()  # the test says when the lease has ended
try:
    # A call that reaches the server (a device's attributes may be answered from the client's cache).
    tvm.nd.array(np.ones(4, dtype="float32"), remote.cpu(0))
    print("still served")
except Exception as err:
    print("expired", "RPCSessionTimeoutError" in str(err))
`);
    await waitFor("the client connected", () => /connected True/.test(run.output()), 60_000);
    await freeAgain("the board free after the client's session timed out");
    run.child.stdin?.end("go\n");
    const { code, out } = await run.done;
    assert.equal(code, 0, out);
    assert.match(out, /connected True/);
    assert.match(out, /expired True/, out);
  });

  it("a kernelfarm host is not granted a tvm board: told it serves TVM clients", { skip: MISSING }, async () => {
    await assert.rejects(client.request(KEY, { deadlineMs: 2000 }), (err: Error & { code?: string }) => {
      assert.equal(err.code, "NO_BOARD", err.message);
      assert.match(err.message, new RegExp(`no board serves key "${KEY}".*serve TVM clients only`));
      return true;
    });
  });

  it("a grant whose client never connects is taken back, and its match key dies with the lease", { skip: MISSING }, async () => {
    const run = python(`${prelude()}
from tvm.rpc import base
base.sendjson(t._sock, [base.TrackerCode.REQUEST, "${KEY}", "", 1])
ok, (host, port, matchkey) = base.recvjson(t._sock)
print("granted", ok, flush=True)
import sys
sys.stdin.readline()
try:
    rpc.connect(host, port, key=matchkey)
    print("stale key accepted")
except Exception as err:
    print("stale key refused", "matches key" in str(err))
`);
    await waitFor("the grant", () => /granted 0/.test(run.output()), 60_000);
    assert.equal((await board())?.state, "busy");
    await freeAgain("the board taken back from the client that never came");
    // Now the client comes, too late.
    run.child.stdin?.end();
    const { code, out } = await run.done;
    assert.equal(code, 0, out);
    assert.match(out, /stale key refused True/);
  });

  it("autotvm's run_through_rpc measures the module on the board", { skip: MISSING }, async () => {
    const run = python(`${prelude()}
from types import SimpleNamespace
from tvm.autotvm.measure.measure import MeasureInput
from tvm.autotvm.measure.measure_methods import BuildResult, default_module_loader, run_through_rpc
n = 4096
arg_info = [((n,), "float32")] * 3
ref = [np.random.rand(n).astype("float32") for _ in range(3)]
result = run_through_rpc(
    MeasureInput("llvm", SimpleNamespace(name="vadd"), None),
    BuildResult("${module}", arg_info, None, 0.1),
    number=10, repeat=3, min_repeat_ms=0, cooldown_interval=0,
    remote_kwargs=dict(device_key="${KEY}", host="${tvm.host}", port=${tvm.port}, priority=1, timeout=60),
    ref_input=ref,
    module_loader=default_module_loader(),
)
print("error_no", result.error_no, "costs", len(result.costs), all(c > 0 for c in result.costs))
`);
    const { code, out } = await run.done;
    assert.equal(code, 0, out);
    assert.match(out, /error_no 0 costs \d+ True/, out);
    await freeAgain("the board free after autotvm's measurement");
  });

  it("autotvm's RPCRunner (set_task, run; two candidates in parallel on one board) measures on it, unchanged", { skip: MISSING }, async () => {
    const run = python(`${prelude()}
from types import SimpleNamespace
from tvm import autotvm
from tvm.autotvm.measure.measure import MeasureInput
from tvm.autotvm.measure.measure_methods import BuildResult
n = 4096
runner = autotvm.RPCRunner("${KEY}", "${tvm.host}", ${tvm.port}, number=10, repeat=3, timeout=60, n_parallel=2)
runner.ref_input = [np.random.rand(n).astype("float32") for _ in range(3)]
task = SimpleNamespace(name="vadd", target="llvm", target_host=None)
runner.set_task(task)  # autotvm's check_remote: a session that only asks for the device
results = runner.run([MeasureInput("llvm", task, None)] * 2, [BuildResult("${module}", [((n,), "float32")] * 3, None, 0.1)] * 2)
# 3 repeats each; autotvm drops the fastest and the slowest of more than 2.
print("errors", [int(r.error_no) for r in results], "costs", [len(r.costs) for r in results], all(c > 0 for r in results for c in r.costs))
`);
    const { code, out } = await run.done;
    assert.equal(code, 0, out);
    assert.match(out, /errors \[0, 0\] costs \[1, 1\] True/, out);
    await freeAgain("the board free after autotvm's runner");
  });
});

describe("a tvm board beside a cpu board, on a tracker with a session cap", () => {
  let tracker: TrackerProcess;
  let agent: AgentProcess;
  let client: TrackerClient;
  let tvm: { host: string; port: number };

  before(async () => {
    if (MISSING) return;
    tracker = await startTrackerProcess(["--tvm-port", "0", "--max-session-timeout-ms", "3000"]);
    tvm = splitAddress(tracker.tvmAddress!);
    // A cpu board beside it, and no standby lanes: kernelfarm hosts come through the port TVM clients use too.
    agent = await startAgentProcess(tracker.address, [`tvm:key=${KEY}`, "cpu:key=cpu-beside"], ["--no-standby"], { env: tvmEnv() as Record<string, string> });
    client = await connectTracker(tracker.address);
    await waitFor("both boards free", async () => (await client.summary()).boards.filter((b) => b.state === "free").length === 2, 30_000);
  });
  after(async () => {
    client?.close();
    await agent?.stop();
    await tracker?.stop();
  });

  it("a client still connected at the cap loses its session; the board returns", { skip: MISSING }, async () => {
    const run = python(heldSession(tvm));
    await waitFor("the client connected", () => /connected True/.test(run.output()), 60_000);
    await waitFor("the board free after the cap", async () => (await client.summary()).boards.some((b) => b.key === KEY && b.state === "free"), 30_000);
    run.child.stdin?.end("go\n");
    const { code, out } = await run.done;
    assert.equal(code, 0, out);
    assert.match(out, /connected True/);
    assert.match(out, /cut off/);
  });

  it("a kernelfarm host's session on the cpu board opens at the same port", { skip: MISSING }, async () => {
    const s = await client.request("cpu-beside", { route: "direct" });
    try {
      assert.equal(s.lane, "direct");
      await s.upload(Buffer.from("hello"), "note.txt");
      assert.deepEqual(
        (await s.listdir()).map((e) => e.name),
        ["note.txt"],
      );
    } finally {
      await s.close();
    }
  });

  // Last: the agent goes.
  it("an agent that stops mid-session cuts its TVM client off, and no server loop outlives it", { skip: MISSING }, async () => {
    const run = python(heldSession(tvm));
    await waitFor("the client connected", () => /connected True/.test(run.output()), 60_000);
    assert.equal((await client.summary()).boards.find((b) => b.key === KEY)?.state, "busy");
    await agent.stop();
    run.child.stdin?.end("go\n");
    const { code, out } = await run.done;
    assert.equal(code, 0, out);
    // Its socket closed: no process holds it any more, the server loop's child included.
    assert.match(out, /cut off/);
    await waitFor("the agent's boards gone", async () => (await client.summary()).boards.length === 0, 15_000);
    // A tvm board that left is no kernelfarm board coming back: a kernelfarm host's request for its key (without a
    // deadline of its own, which would wait for any board of the key to attach) is refused at once, not held.
    await assert.rejects(client.request(KEY), (err: Error & { code?: string }) => {
      assert.equal(err.code, "NO_BOARD", err.message);
      return true;
    });
  });
});

describe("a tvm board whose TVM runtime breaks", () => {
  let tracker: TrackerProcess;
  let agent: AgentProcess;
  let client: TrackerClient;
  let dir: string;

  before(async () => {
    if (MISSING) return;
    // An interpreter that imports TVM but whose TVM runtime cannot load a module any more: what the canary is for.
    dir = mkdtempSync(join(tmpdir(), "kfarm-tvm-broken-"));
    chmodSync(dir, 0o755);
    const wrapper = join(dir, "python3");
    writeFileSync(
      wrapper,
      `#!/bin/sh\ncase "$2" in *kfarm_tvm_canary_vadd*) echo "TVMError: cannot load the module: broken runtime" >&2; exit 1;; esac\nexec ${PYTHON} "$@"\n`,
      { mode: 0o755 },
    );
    tracker = await startTrackerProcess();
    agent = await startAgentProcess(tracker.address, [`tvm:key=broken,python=${wrapper}`], ["--canary-interval-ms", "300"], {
      env: tvmEnv() as Record<string, string>,
    });
    client = await connectTracker(tracker.address);
  });
  after(async () => {
    client?.close();
    await agent?.stop();
    await tracker?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("fails its canaries and is quarantined, saying what TVM's runtime said", { skip: MISSING }, async () => {
    const board = await waitFor(
      "the board quarantined",
      async () => (await client.summary()).boards.find((b) => b.key === "broken" && b.health === "quarantined"),
      30_000,
    );
    assert.match(
      board.health_reason,
      /canary failed: TVM's runtime could not load and run the canary module: TVMError: cannot load the module: broken runtime/,
    );
  });
});

describe("an agent with a tvm board", () => {
  it("refuses to start where TVM is not found, saying where it looked and what to set", async () => {
    const r = await runCli(["agent", "--tracker", "127.0.0.1:1", "--board", "tvm:key=k,tvm_home=/nonexistent/tvm"]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /TVM home \/nonexistent\/tvm holds no TVM .*point tvm_home= or \$KFARM_TVM_HOME at a TVM build/);
    const python = await runCli(["agent", "--tracker", "127.0.0.1:1", "--board", "tvm:key=k,python=/nonexistent/python3"]);
    assert.notEqual(python.code, 0);
    assert.match(python.stderr, /a tvm board needs Python with Apache TVM: \/nonexistent\/python3 cannot run .*give python=PATH/);
  });

  it("refuses to start without a plaintext direct lane: TVM's clients speak plain TCP", async () => {
    const r = await runCli(["agent", "--tracker", "127.0.0.1:1", "--board", "tvm:key=k", "--no-direct"]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /board tvm0 \(tvm\) serves TVM clients, which connect to this agent's direct-lane port in plain TCP/);
  });
});

/** Every process under `pid`, children first. */
function descendantsOf(pid: number): number[] {
  const out: number[] = [];
  for (const child of childrenOf(pid)) out.push(child, ...descendantsOf(child));
  return out;
}

function readMaps(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/maps`, "utf8");
  } catch {
    return "";
  }
}

/** A TVM client that takes a session on the board, holds it until the test writes a line, then calls once: "still served" or "cut off". */
function heldSession(tvm: { host: string; port: number }): string {
  return `
import sys
import numpy as np, tvm
from tvm import rpc
remote = rpc.connect_tracker("${tvm.host}", ${tvm.port}).request("${KEY}", priority=1)
print("connected", remote.cpu(0).exist, flush=True)
sys.stdin.readline()  # the test says when
try:
    tvm.nd.array(np.ones(4, dtype="float32"), remote.cpu(0))
    print("still served")
except Exception:
    print("cut off")
`;
}
