import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import type { FarmError } from "../../protos/index.ts";
import { resolveAgentOptions, workerLimitsFor } from "./options.ts";
import {
  describeSandbox,
  effectiveLimits,
  parseWorkerLimits,
  parseWorkerUids,
  resolveSandbox,
  UidAllocator,
  workerCommand,
  workerEnv,
  type SandboxPlan,
  type WorkerLimits,
} from "./sandbox.ts";

const LIMITS: WorkerLimits = { nofile: 1024, nproc: 256, fsize: 1 << 30, as: 0 };
const tools = { unshare: "/usr/bin/unshare", setpriv: "/usr/bin/setpriv", prlimit: "/usr/bin/prlimit" };
const NODE = ["/usr/bin/node", "/x/worker.mjs"];

function plan(p: Partial<SandboxPlan>): SandboxPlan {
  return { network: "shared", tools, limits: () => LIMITS, diskBytes: 0, notes: [], ...p };
}

describe("sandbox: how a worker is started", () => {
  it("as root: its own network namespace, then its own uid with the workers' group and no new privileges, then its limits, then node", () => {
    const argv = workerCommand(plan({ users: { group: 61000, first: 61001, last: 61999 }, network: "netns" }), "cpu", 61005, NODE);
    assert.deepEqual(argv, [
      "/usr/bin/unshare",
      "--net",
      "--",
      "/usr/bin/setpriv",
      "--reuid",
      "61005",
      "--regid",
      "61005",
      "--groups",
      "61000",
      "--no-new-privs",
      "--",
      "/usr/bin/prlimit",
      "--nofile=1024:1024",
      "--nproc=256:256",
      `--fsize=${1 << 30}:${1 << 30}`,
      "--",
      ...NODE,
    ]);
  });

  it("not root with user namespaces: a user and network namespace, no uid switch, the process limit (counted in its namespace)", () => {
    const argv = workerCommand(plan({ network: "userns" }), "cpu", undefined, NODE);
    assert.deepEqual(argv.slice(0, 5), ["/usr/bin/unshare", "--user", "--map-root-user", "--net", "--"]);
    assert.deepEqual(argv.slice(5, 8), ["/usr/bin/setpriv", "--no-new-privs", "--"]);
    assert.ok(argv.includes("--nproc=256:256"));
  });

  it("not root without namespaces: the network and no process limit (RLIMIT_NPROC would count the whole user's processes)", () => {
    const argv = workerCommand(plan({}), "cpu", undefined, NODE);
    assert.ok(!argv.includes("/usr/bin/unshare"));
    assert.ok(!argv.some((a) => a.startsWith("--nproc")), argv.join(" "));
    assert.equal(effectiveLimits(plan({}), "cpu").nproc, 0);
  });

  it("a limit of 0 is not set; without prlimit nothing is", () => {
    const argv = workerCommand(plan({ limits: () => ({ ...LIMITS, fsize: 0, as: 8 * 2 ** 30 }) }), "cpu", undefined, NODE);
    assert.ok(!argv.some((a) => a.startsWith("--fsize")));
    assert.ok(argv.includes(`--as=${8 * 2 ** 30}:${8 * 2 ** 30}`));
    assert.deepEqual(workerCommand(plan({ tools: { setpriv: tools.setpriv } }), "cpu", undefined, NODE).slice(3), NODE);
  });

  it("the description names the user, the network, the limits and the disk", () => {
    const p = plan({ users: { group: 61000, first: 61001, last: 61999 }, network: "netns", diskBytes: 4 << 20 });
    assert.equal(
      describeSandbox(p, "cpu"),
      `user=uids 61001-61999; network=isolated (netns); limits=nofile=1024,nproc=256,fsize=${1 << 30}; disk=${4 << 20} per session (tmpfs)`,
    );
  });

  it("resolveSandbox: root gets uids (the range's first id is the group); not root, a note says what does not hold", () => {
    const req = { workerUids: [61000, 61999] as const, workerNetwork: "isolated" as const, limits: () => LIMITS };
    const root = resolveSandbox(req, { isRoot: true, probe: false });
    assert.deepEqual(root.users, { group: 61000, first: 61001, last: 61999 });
    assert.equal(root.network, "netns");
    const user = resolveSandbox(req, { isRoot: false, probe: false });
    assert.equal(user.users, undefined);
    assert.equal(user.network, "userns");
    assert.match(user.notes.join("\n"), /agent's user/);
    const shared = resolveSandbox({ ...req, workerNetwork: "shared" }, { isRoot: true, probe: false });
    assert.equal(shared.network, "shared");
    assert.match(shared.notes.join("\n"), /keep the network/);
  });

  it("resolveSandbox: a per-session tmpfs only as root with uids of its own; otherwise a note, and the line says unbounded", () => {
    const req = { workerUids: [61000, 61999] as const, workerNetwork: "isolated" as const, limits: () => LIMITS, diskBytes: 8 << 20 };
    const root = resolveSandbox(req, { isRoot: true, probe: false });
    assert.equal(root.diskBytes, 8 << 20);
    assert.match(describeSandbox(root, "cpu"), /; disk=8388608 per session \(tmpfs\)$/);
    const user = resolveSandbox(req, { isRoot: false, probe: false });
    assert.equal(user.diskBytes, 0);
    assert.match(user.notes.join("\n"), /no per-session disk quota: the session's tmpfs needs the agent as root/);
    assert.match(describeSandbox(user, "cpu"), /; disk=unbounded$/);
    const off = resolveSandbox({ ...req, diskBytes: 0 }, { isRoot: true, probe: false });
    assert.equal(off.diskBytes, 0);
    assert.match(off.notes.join("\n"), /--worker-disk off/);
  });
});

describe("sandbox: the worker's environment", () => {
  it("holds only the allowed variables and the worker's own, never the agent's secrets", () => {
    const env = workerEnv(
      {
        PATH: "/usr/bin",
        LANG: "C.UTF-8",
        LC_ALL: "C",
        CUDA_VISIBLE_DEVICES: "1",
        KFARM_TOKEN: "t0ken",
        AWS_SECRET_ACCESS_KEY: "s",
        KFARM_LOG: "info",
        HOME: "/root",
        SSH_AUTH_SOCK: "/tmp/x",
      },
      { KFARM_WORKER: "{}", HOME: "/w/home/61001" },
    );
    assert.deepEqual(env, {
      PATH: "/usr/bin",
      LANG: "C.UTF-8",
      LC_ALL: "C",
      CUDA_VISIBLE_DEVICES: "1",
      KFARM_LOG: "info",
      KFARM_WORKER: "{}",
      HOME: "/w/home/61001",
    });
  });
});

describe("sandbox: uids", () => {
  // Far above any account; no process runs as these.
  const users = { group: 3_900_000_000, first: 3_900_000_001, last: 3_900_000_002 };
  const claims = () => mkdtempSync(join(tmpdir(), "kfarm-uids-"));

  it("never hands out a uid twice while it is live, and hands out none without a range", async () => {
    const uids = new UidAllocator(plan({ users, tools: { ...tools, setpriv: "/bin/true" } }), claims());
    const a = uids.take();
    const b = uids.take();
    assert.deepEqual([a, b], [users.first, users.last]);
    assert.throws(() => uids.take(), /every worker uid 3900000001-3900000002 is in use/);
    await uids.release(a);
    assert.equal(uids.take(), users.first);
    assert.equal(new UidAllocator(plan({})).take(), undefined);
  });

  it("two agents of one host never hold the same uid; a dead agent's claim is taken over", () => {
    const dir = claims();
    const p = plan({ users, tools: { ...tools, setpriv: "/bin/true" } });
    const one = new UidAllocator(p, dir);
    const two = new UidAllocator(p, dir);
    assert.equal(one.take(), users.first);
    assert.equal(two.take(), users.last, "the other agent's uid is skipped");
    assert.throws(() => two.take(), /in use/);
    // A claim left by an agent that died (no such pid) is free again.
    writeFileSync(join(dir, String(users.first)), "2147483646");
    assert.equal(new UidAllocator(p, dir).take(), users.first);
    // A bare pid: agents of every version on a host read claims as a number.
    assert.equal(readFileSync(join(dir, String(users.first)), "utf8"), String(process.pid));
    // A claim of a pid that is alive but started after the claim was written (the pid was reused) is a dead agent's too.
    writeFileSync(join(dir, String(users.last)), String(process.pid));
    const hourAgo = new Date(Date.now() - performance.now() - 3_600_000);
    utimesSync(join(dir, String(users.last)), hourAgo, hourAgo);
    rmSync(join(dir, String(users.first)));
    assert.deepEqual(new UidAllocator(p, dir).sweepDead(), [users.last]);
    assert.ok(!existsSync(join(dir, String(users.last))));
  });
});

describe("sandbox: options", () => {
  const board = { kind: "cpu" as const, key: "cpu", name: "c", labels: {}, options: {} };

  it("parses --worker-limits and --worker-uids, naming what is wrong", () => {
    assert.deepEqual(parseWorkerLimits("nofile=64, nproc=32,fsize=2m,as=off", "--worker-limits"), { nofile: 64, nproc: 32, fsize: 2 << 20, as: 0 });
    assert.throws(
      () => parseWorkerLimits("cpu=3", "--worker-limits"),
      (e: FarmError) => e.code === "INVALID_ARGUMENT" && /--worker-limits: "cpu=3"/.test(e.message),
    );
    assert.throws(() => parseWorkerLimits("nproc=many", "--worker-limits"), /nproc="many" must be a whole number/);
    assert.deepEqual(parseWorkerUids("61000-61999", "--worker-uids"), [61000, 61999]);
    assert.equal(parseWorkerUids("off", "--worker-uids"), undefined);
    assert.throws(
      () => parseWorkerUids("0-10", "--worker-uids"),
      (e: FarmError) => e.code === "INVALID_ARGUMENT" && /FIRST-LAST/.test(e.message),
    );
    assert.throws(() => parseWorkerUids("62000-61000", "--worker-uids"), /FIRST-LAST/);
  });

  it("resolves defaults: file size = the largest upload, address space off for every kind unless set", () => {
    const o = resolveAgentOptions({ tracker: "127.0.0.1:1", boards: [board], maxUploadBytes: 1 << 20 });
    assert.deepEqual(o.workerUids, [61000, 61999]);
    assert.equal(o.workerNetwork, "isolated");
    assert.deepEqual(workerLimitsFor(o, "cpu"), { nofile: 1024, nproc: 256, fsize: 1 << 20, as: 0 });
    assert.deepEqual(workerLimitsFor(o, "cuda"), { nofile: 1024, nproc: 256, fsize: 1 << 20, as: 0 });
    const set = resolveAgentOptions({ tracker: "127.0.0.1:1", boards: [board], workerLimits: "as=16g,nproc=64", workerUids: "off", workerNetwork: "shared" });
    assert.equal(workerLimitsFor(set, "cuda").as, 16 * (1 << 30));
    assert.equal(set.workerLimits.nproc, 64);
    assert.equal(set.workerUids, undefined);
    assert.equal(set.workerNetwork, "shared");
  });

  it("refuses a file-size limit below the largest upload, and unknown network modes", () => {
    assert.throws(
      () => resolveAgentOptions({ tracker: "127.0.0.1:1", boards: [board], workerLimits: { fsize: 1000 } }),
      (e: FarmError) => e.code === "INVALID_ARGUMENT" && /workerLimits.fsize/.test(e.message),
    );
    assert.throws(() => resolveAgentOptions({ tracker: "127.0.0.1:1", boards: [board], workerNetwork: "none" as "shared" }), /workerNetwork must be/);
  });
});
