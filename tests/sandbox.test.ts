/**
 * Session workers under attack, against real processes: CPU kernels that try
 * to read another live session's folder, the agent's environment or files,
 * open a socket, fork without end, or write without end. In every case the
 * kernel gets a clear error (or its session a clear code), nothing is
 * granted, and the farm keeps serving everyone else (docs/sandbox.md).
 *
 * What needs root (uids of their own, a network namespace) skips, saying why,
 * where the test does not run as root or the kernel refuses namespaces; the
 * test probes the OS itself, so an agent that wrongly reports "shared" fails.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { compileCpu, type CompiledModule, type RemoteModule, type Session } from "../host-sdk/index.ts";
import type { FarmError } from "../protos/index.ts";
import { compileVadd } from "./helpers/kernels.ts";
import { startFarm, waitFor, waitForFreeBoards } from "./helpers/processes.ts";
import { cwdOf } from "./helpers/procfs.ts";

const IS_ROOT = process.getuid?.() === 0;
const NETNS = IS_ROOT && spawnSync("unshare", ["--net", "--", "true"]).status === 0;
const NOT_ROOT = IS_ROOT ? false : "needs root: workers run as uids of their own only when the agent is root";
const NO_NETNS = NETNS
  ? false
  : IS_ROOT
    ? "`unshare --net` fails here: workers keep the network (docs/sandbox.md)"
    : "needs root for a network namespace (this test does not probe user namespaces)";
const NO_TMPFS = IS_ROOT ? false : "needs root: only an agent running as root mounts a tmpfs on each session's folder";
const SECRET = "KFARM_TEST_SECRET";
const EACCES = 13;
const EAGAIN = 11;
const EFBIG = 27;
const ENOSPC = 28;
const ENETUNREACH = 101;

const ATTACKS = `
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

/* out[0]: 0 when the file could be opened for reading, else errno. */
void try_open(const uint8_t* path, int32_t* out) {
  int fd = open((const char*)path, O_RDONLY);
  out[0] = fd < 0 ? errno : 0;
  if (fd >= 0) close(fd);
}
/* out[0]: 0 when the folder could be listed, else errno. */
void try_list(const uint8_t* path, int32_t* out) {
  DIR* d = opendir((const char*)path);
  out[0] = d ? 0 : errno;
  if (d) closedir(d);
}
/* out[0]: getenv finds it; out[1]: /proc/self/environ holds it; out[2]: how many variables there are. */
void find_env(const uint8_t* name, int32_t* out) {
  out[0] = getenv((const char*)name) != NULL;
  out[1] = 0; out[2] = 0;
  char buf[65536];
  int fd = open("/proc/self/environ", O_RDONLY);
  ssize_t n = fd < 0 ? 0 : read(fd, buf, sizeof buf - 1);
  if (fd >= 0) close(fd);
  for (ssize_t i = 0; i < n; i += strlen(buf + i) + 1) {
    out[2]++;
    if (strncmp(buf + i, (const char*)name, strlen((const char*)name)) == 0) out[1] = 1;
  }
}
/* out[0]: 0 when a TCP connection to 127.0.0.1:port opened, else errno (of socket() or connect()). */
void try_connect(int32_t port, int32_t* out) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) { out[0] = errno; return; }
  struct sockaddr_in a; memset(&a, 0, sizeof a);
  a.sin_family = AF_INET; a.sin_port = htons((uint16_t)port); a.sin_addr.s_addr = htonl(0x7f000001);
  out[0] = connect(s, (struct sockaddr*)&a, sizeof a) < 0 ? errno : 0;
  close(s);
}
/* Forks children that sleep until fork fails: out[0] how many, out[1] the errno that stopped it. */
void fork_count(int32_t* out) {
  for (int n = 0;; n++) {
    pid_t p = fork();
    if (p == 0) for (;;) pause();
    if (p < 0) { out[0] = n; out[1] = errno; return; }
  }
}
/* The real thing: every process forks forever. Never returns. */
void fork_bomb(void) { for (;;) fork(); }
/* Writes until a write fails: out[0] the errno, out[1] the KiB written. */
void fill(const uint8_t* path, int32_t* out) {
  static char buf[1 << 16];
  int fd = open((const char*)path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) { out[0] = errno; out[1] = -1; return; }
  long total = 0;
  for (;;) {
    ssize_t w = write(fd, buf, sizeof buf);
    if (w <= 0) { out[0] = w < 0 ? errno : 0; break; }
    total += w;
  }
  close(fd);
  out[1] = (int32_t)(total / 1024);
}
/* Writes files of 256 KiB (each under the file-size limit) into the folder until a write fails:
   out[0] the errno, out[1] the KiB written in all, out[2] how many files. */
void fill_many(const uint8_t* dir, int32_t* out) {
  static char buf[1 << 16];
  char path[4096];
  long total = 0;
  int files = 0;
  for (;; files++) {
    snprintf(path, sizeof path, "%s/f%d", (const char*)dir, files);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) { out[0] = errno; break; }
    int err = 0;
    for (int i = 0; i < 4; i++) {
      ssize_t w = write(fd, buf, sizeof buf);
      if (w < 0) { err = errno; break; }
      total += w;
      if (w < (ssize_t)sizeof buf) { err = ENOSPC; break; }
    }
    close(fd);
    if (err) { out[0] = err; break; }
  }
  out[1] = (int32_t)(total / 1024);
  out[2] = files;
}
/* The same with SIGXFSZ's default action (Node ignores it): the write past the limit kills the process. */
void fill_dfl(const uint8_t* path, int32_t* out) { signal(SIGXFSZ, SIG_DFL); fill(path, out); }
`;

function compileAttacks(): Promise<CompiledModule> {
  return compileCpu(ATTACKS, {
    functions: {
      try_open: ["uint8* path", "int32* out"],
      try_list: ["uint8* path", "int32* out"],
      find_env: ["uint8* name", "int32* out"],
      try_connect: ["int32 port", "int32* out"],
      fork_count: ["int32* out"],
      fork_bomb: [],
      fill: ["uint8* path", "int32* out"],
      fill_dfl: ["uint8* path", "int32* out"],
      fill_many: ["uint8* dir", "int32* out"],
    },
  });
}

/** A C string argument. */
const cstr = (s: Session, text: string) => s.array(new Uint8Array(Buffer.from(`${text}\0`)));

async function loaded(s: Session, m: CompiledModule): Promise<RemoteModule> {
  await s.upload(m);
  return s.loadModule(m.name);
}

/** Runs `fn` of `mod` with the arguments and a fresh int32[3] `out`, and returns `out`. */
async function probe(
  s: Session,
  mod: RemoteModule,
  fn: string,
  ...args: Array<number | Awaited<ReturnType<Session["array"]>>>
): Promise<[number, number, number]> {
  const out = await s.array({ shape: [3], dtype: "int32" });
  await mod.getFunction(fn)(...args, out);
  const [a, b, c] = (await out.toArray()) as Int32Array;
  return [a!, b!, c!];
}

/** The uid a process runs as (from /proc). */
function uidOf(pid: number): number {
  return Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]);
}

/** Pids of every live process running as `uid`. */
function processesOf(uid: number): number[] {
  const pids: number[] = [];
  for (const p of readdirSync("/proc")) {
    if (!/^\d+$/.test(p)) continue;
    try {
      if (uidOf(Number(p)) === uid) pids.push(Number(p));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** A session on the farm runs a kernel and gets the right answer: the farm serves. */
async function serves(farm: Awaited<ReturnType<typeof startFarm>>, vadd: CompiledModule, labels?: Record<string, string>): Promise<void> {
  const s = await farm.client.request("cpu", { deadlineMs: 10_000, ...(labels ? { labels } : {}) });
  try {
    const f = (await loaded(s, vadd)).getFunction("vadd");
    const [a, b, c] = await Promise.all([s.array(new Float32Array([1, 2])), s.array(new Float32Array([3, 4])), s.array({ shape: [2], dtype: "float32" })]);
    await f(a, b, c, 2);
    assert.deepEqual([...((await c.toArray()) as Float32Array)], [4, 6]);
  } finally {
    await s.close();
  }
}

describe("session workers under attack", () => {
  let farm: Awaited<ReturnType<typeof startFarm>>;
  let attacks: CompiledModule;
  let vadd: CompiledModule;
  let workRoot: string;

  before(async () => {
    // The agent's environment holds a secret (as it would a token): no kernel may find it.
    process.env[SECRET] = "hunter2";
    try {
      [farm, attacks, vadd] = await Promise.all([
        startFarm(["cpu:key=cpu,name=a,zone=a", "cpu:key=cpu,name=b,zone=b"], { agentArgs: ["--worker-limits", "nproc=64", "--call-timeout-ms", "20000"] }),
        compileAttacks(),
        compileVadd(),
      ]);
    } finally {
      delete process.env[SECRET];
    }
    workRoot = join(tmpdir(), `kfarm-agent-${farm.agent.proc.pid}`);
  });
  after(() => farm.stop());

  it("the boards say how their workers are confined (the `sandbox` capability), and it is what this OS allows", async () => {
    const boards = (await farm.client.summary()).boards;
    assert.equal(boards.length, 2);
    for (const b of boards) {
      const sandbox = b.capabilities.sandbox ?? "";
      assert.match(sandbox, /limits=nofile=1024,nproc=64|limits=nofile=1024,fsize/);
      if (IS_ROOT) assert.match(sandbox, /user=uids 61001-61999/);
      else assert.match(sandbox, /user=agent's user/);
      if (NETNS) assert.match(sandbox, /network=isolated \(netns\)/);
    }
  });

  it("a kernel finds none of the agent's environment: getenv and /proc/self/environ", async () => {
    const s = await farm.client.request("cpu");
    try {
      const mod = await loaded(s, attacks);
      const [viaGetenv, viaProc, count] = await probe(s, mod, "find_env", await cstr(s, SECRET));
      assert.equal(viaGetenv, 0, "getenv found the agent's secret");
      assert.equal(viaProc, 0, "/proc/self/environ holds the agent's secret");
      // The worker's own few (PATH, HOME, TMPDIR, KFARM_WORKER, ...), not the agent's dozens.
      assert.ok(count > 0 && count < 16, `${count} variables`);
    } finally {
      await s.close();
    }
  });

  it("a kernel cannot read another live session's folder, the agent's scratch root, its store, or its /proc entries", { skip: NOT_ROOT }, async () => {
    const [victim, attacker] = await Promise.all([
      farm.client.request("cpu", { labels: { zone: "a" } }),
      farm.client.request("cpu", { labels: { zone: "b" } }),
    ]);
    try {
      await victim.upload(Buffer.from("the victim's weights"), "secret.bin");
      // The session's folder (made while its worker was idle, so not named for the session): the worker's working directory.
      const victimDir = cwdOf(Number((await victim.stats()).info.worker_pid));
      // The file is there (the test runs as root and can see it): only the attacker cannot.
      assert.deepEqual(readdirSync(victimDir), ["secret.bin"]);
      const mod = await loaded(attacker, attacks);
      const [vPid, aPid] = [Number((await victim.stats()).info.worker_pid), Number((await attacker.stats()).info.worker_pid)];
      assert.notEqual(uidOf(vPid), uidOf(aPid), "two live workers share a uid");
      assert.ok(uidOf(aPid) >= 61001 && uidOf(aPid) <= 61999);
      const denied = async (fn: string, path: string) =>
        assert.deepEqual((await probe(attacker, mod, fn, await cstr(attacker, path)))[0], EACCES, `${fn} ${path}`);
      await denied("try_open", join(victimDir, "secret.bin"));
      await denied("try_list", victimDir);
      await denied("try_list", workRoot);
      await denied("try_list", join(workRoot, "store"));
      await denied("try_open", `/proc/${farm.agent.proc.pid}/environ`);
      await denied("try_open", `/proc/${vPid}/environ`);
      // Its own folder it can use, of course.
      await attacker.upload(Buffer.from("mine"), "mine.bin");
      assert.equal(
        (await probe(attacker, mod, "try_open", await cstr(attacker, join(cwdOf(Number((await attacker.stats()).info.worker_pid)), "mine.bin"))))[0],
        0,
      );
      // The victim's session is untouched.
      assert.equal((await victim.download("secret.bin")).toString(), "the victim's weights");
    } finally {
      await Promise.all([victim.close(), attacker.close()]);
    }
  });

  it("a kernel cannot open a socket to the tracker (no network in its namespace); its session still works through the agent", { skip: NO_NETNS }, async () => {
    const s = await farm.client.request("cpu");
    try {
      const mod = await loaded(s, attacks);
      const [err] = await probe(s, mod, "try_connect", farm.tracker.port);
      assert.equal(err, ENETUNREACH, `connect to the tracker's port gave errno ${err}`);
      assert.ok((await s.listdir()).length > 0, "the session's own stream to the tracker is unaffected");
    } finally {
      await s.close();
    }
  });

  it("a kernel that forks until it cannot is stopped by the process limit; its children die with its session", { skip: NOT_ROOT }, async () => {
    const s = await farm.client.request("cpu");
    let uid: number;
    try {
      const mod = await loaded(s, attacks);
      uid = uidOf(Number((await s.stats()).info.worker_pid));
      const [children, errno] = await probe(s, mod, "fork_count");
      assert.equal(errno, EAGAIN, `fork stopped with errno ${errno}`);
      // 64 processes and threads of the uid: the worker's own threads take some of them.
      assert.ok(children > 0 && children < 64, `${children} children`);
      assert.ok(processesOf(uid).length > children, "the children are alive while the session runs");
    } finally {
      await s.close();
    }
    await waitFor(`every process of uid ${uid} to be gone`, () => processesOf(uid).length === 0);
    await serves(farm, vadd);
  });

  it("a fork bomb ends its session at the call timeout; every process of it is killed and the other board serves throughout", { skip: NOT_ROOT }, async () => {
    const s = await farm.client.request("cpu", { labels: { zone: "a" } });
    const mod = await loaded(s, attacks);
    const uid = uidOf(Number((await s.stats()).info.worker_pid));
    const bomb = mod.getFunction("fork_bomb").withOptions({ timeoutMs: 1500 })();
    // While it rages, the other board serves.
    await serves(farm, vadd, { zone: "b" });
    await assert.rejects(bomb, (e: FarmError) => e.code === "TIMEOUT" && /fork_bomb ran past its 1500 ms timeout/.test(e.message));
    await waitFor(`every process of uid ${uid} to be gone`, () => processesOf(uid).length === 0);
    await waitForFreeBoards(farm.client, 2);
    await serves(farm, vadd, { zone: "a" });
  });
});

describe("a kernel that fills the disk", () => {
  let farm: Awaited<ReturnType<typeof startFarm>>;
  let attacks: CompiledModule;
  let vadd: CompiledModule;
  const LIMIT = 1 << 20;

  before(async () => {
    // The file-size limit may not be below the largest upload: both 1 MiB here.
    [farm, attacks, vadd] = await Promise.all([
      startFarm(["cpu:key=cpu"], { agentArgs: ["--max-upload-bytes", "1m", "--worker-limits", "fsize=1m"] }),
      compileAttacks(),
      compileVadd(),
    ]);
  });
  after(() => farm.stop());

  it("writes stop at the file-size limit with EFBIG; the session goes on", async () => {
    const s = await farm.client.request("cpu");
    try {
      const mod = await loaded(s, attacks);
      const [errno, kib] = await probe(s, mod, "fill", await cstr(s, "big.bin"));
      assert.equal(errno, EFBIG, `the write failed with errno ${errno}`);
      assert.equal(kib * 1024, LIMIT);
      assert.ok((await s.stats()).info.worker_pid, "the worker lives on");
    } finally {
      await s.close();
    }
  });

  it("a kernel that restores SIGXFSZ dies of it: TOO_LARGE naming the limit, and the board serves again", async () => {
    const s = await farm.client.request("cpu");
    const mod = await loaded(s, attacks);
    const path = await cstr(s, "big.bin");
    await assert.rejects(probe(s, mod, "fill_dfl", path), (e: FarmError) => {
      assert.equal(e.code, "TOO_LARGE");
      assert.match(e.message, new RegExp(`larger than the worker's limit of ${LIMIT} bytes`));
      return true;
    });
    assert.equal(s.closedReason?.code, "TOO_LARGE");
    await waitForFreeBoards(farm.client, 1);
    await serves(farm, vadd);
  });
});

describe("a kernel that fills its session's disk quota", () => {
  let farm: Awaited<ReturnType<typeof startFarm>>;
  let attacks: CompiledModule;
  let vadd: CompiledModule;
  const QUOTA = 8 << 20;

  before(async () => {
    if (!IS_ROOT) return;
    [farm, attacks, vadd] = await Promise.all([
      startFarm(["cpu:key=cpu"], { agentArgs: ["--worker-disk", "8m", "--max-upload-bytes", "4m"] }),
      compileAttacks(),
      compileVadd(),
    ]);
  });
  after(() => farm?.stop());

  /** Whether `dir` is a mount point (in /proc/self/mountinfo). */
  const mounted = (dir: string) =>
    readFileSync("/proc/self/mountinfo", "utf8")
      .split("\n")
      .some((l) => l.split(" ")[4] === dir);

  it("the board says its sessions' disk is bounded", { skip: NO_TMPFS }, async () => {
    const [board] = (await farm.client.summary()).boards;
    assert.match(board!.capabilities.sandbox ?? "", new RegExp(`; disk=${QUOTA} per session \\(tmpfs\\)`));
  });

  it(
    "many files under the file-size limit stop at the quota with ENOSPC; the session's folder goes with it; the board serves again",
    { skip: NO_TMPFS },
    async () => {
      const s = await farm.client.request("cpu");
      const dir = cwdOf(Number((await s.stats()).info.worker_pid));
      try {
        // After a call, not at the grant: the tracker answers the host while the agent mounts (before the worker hears of the session).
        const mod = await loaded(s, attacks);
        assert.ok(mounted(dir), "the session's folder is a mount point");
        // TMPDIR is the session's folder: the kernel's temporary files count against the quota.
        const [errno, kib, files] = await probe(s, mod, "fill_many", await cstr(s, "."));
        assert.equal(errno, ENOSPC, `the writes stopped with errno ${errno}`);
        assert.ok(files > 1, `${files} files`);
        assert.ok(kib * 1024 <= QUOTA, `${kib} KiB written, the quota is ${QUOTA / 1024} KiB`);
        // The module and the files it wrote fill it, nearly to the byte.
        assert.ok(kib * 1024 > QUOTA / 2, `${kib} KiB written`);
      } finally {
        await s.close();
      }
      await waitFor("the session's folder to be unmounted and removed", () => !mounted(dir) && !existsSync(dir));
      await waitForFreeBoards(farm.client, 1);
      await serves(farm, vadd);
    },
  );

  it("an upload beyond what the quota has left: TOO_LARGE naming the quota; the session and the farm go on", { skip: NO_TMPFS }, async () => {
    const s = await farm.client.request("cpu");
    try {
      // Each under the per-upload limit (4 MiB) and the session cap (4 GiB by default): only the quota stops the third.
      await s.upload(Buffer.alloc(3 << 20, 1), "a.bin");
      await s.upload(Buffer.alloc(3 << 20, 2), "b.bin");
      await assert.rejects(s.upload(Buffer.alloc(3 << 20, 3), "c.bin"), (e: FarmError) => {
        assert.equal(e.code, "TOO_LARGE");
        assert.match(e.message, new RegExp(`the session's files reached its disk quota of ${QUOTA} bytes`));
        return true;
      });
      // The failed upload left nothing behind; what fits still fits.
      assert.deepEqual((await s.listdir()).map((f) => f.name).sort(), ["a.bin", "b.bin"]);
      await s.remove("a.bin");
      await s.upload(Buffer.alloc(3 << 20, 3), "c.bin");
    } finally {
      await s.close();
    }
    await waitForFreeBoards(farm.client, 1);
    await serves(farm, vadd);
  });
});
