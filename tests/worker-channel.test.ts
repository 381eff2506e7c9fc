/**
 * A kernel speaks on its worker's channel to the agent (issue 27, items 1-4),
 * against real processes: a tracker and an agent running as root with
 * sandboxed workers, two CPU boards, and a C kernel built with compileCpu
 * that writes whatever bytes the test gives it to any descriptor of its
 * process.
 *
 * Each attack is written twice: as Node IPC JSON on fd 3 (the channel
 * before this contract, where the agent parsed it) and as the contract's
 * framing on fd 4 (protos/farm/v1/worker.proto, where the agent parses it
 * now). Either way: only the attacker's own session ends, PROTOCOL_ERROR
 * ("the session's worker broke the agent's protocol: …"); the agent keeps
 * its pid; another tenant's session on the other board keeps working; no
 * file outside the session changes; the board stays healthy and serves the
 * next session on a fresh process.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, lstatSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { after, afterEach, before, beforeEach, describe, it } from "node:test";
import { compileCpu, type CompiledModule, type RemoteModule, type Session } from "../host-sdk/index.ts";
import { FarmError, encodeToAgent, type WorkerToAgent } from "../protos/index.ts";
import { framed } from "../runtime/index.ts";
import { compileVadd } from "./helpers/kernels.ts";
import { startFarm, waitFor } from "./helpers/processes.ts";
import { cwdOf } from "./helpers/procfs.ts";

const IS_ROOT = process.getuid?.() === 0;

const ATTACKS = `
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
/* Writes n bytes to fd: out[0] is what write() returned, or -errno. */
void raw_write(int32_t fd, const uint8_t* bytes, int32_t n, int32_t* out) {
  ssize_t w = write(fd, bytes, (size_t)n);
  out[0] = w < 0 ? -errno : (int32_t)w;
}
/* A symbolic link at name (in the session's folder) to target: out[0] 0 or errno. */
void make_link(const uint8_t* target, const uint8_t* name, int32_t* out) {
  out[0] = symlink((const char*)target, (const char*)name) < 0 ? errno : 0;
}
void my_pid(int32_t* out) { out[0] = (int32_t)getpid(); }
/* The process never finishes exiting: an atexit handler that waits forever. */
static void stay(void) { for (;;) pause(); }
void linger(int32_t* out) { out[0] = atexit(stay); }
/* Writes n bytes of 'A' to fd however slowly it takes them: out[0] is how many went. */
void flood(int32_t fd, int32_t n, int32_t* out) {
  static char buf[65536];
  memset(buf, 'A', sizeof buf);
  int32_t total = 0;
  while (total < n) {
    ssize_t w = write(fd, buf, (size_t)(n - total < (int32_t)sizeof buf ? n - total : (int32_t)sizeof buf));
    if (w < 0 && errno == EAGAIN) { struct pollfd p = { fd, POLLOUT, 0 }; poll(&p, 1, -1); continue; } /* until the agent reads */
    if (w < 0) { if (errno == EINTR) continue; break; }
    total += (int32_t)w;
  }
  out[0] = total;
}
`;

function compileAttacks(): Promise<CompiledModule> {
  return compileCpu(ATTACKS, {
    functions: {
      raw_write: ["int32 fd", "uint8* bytes", "int32 n", "int32* out"],
      make_link: ["uint8* target", "uint8* name", "int32* out"],
      my_pid: ["int32* out"],
      linger: ["int32* out"],
      flood: ["int32 fd", "int32 n", "int32* out"],
    },
  });
}

/** What the attacker writes: the old channel's bytes on fd 3, the contract's on fd 4. */
interface Attack {
  fd3?: Buffer;
  fd4?: Buffer;
}

/** Node IPC's JSON serialization: one message a line. */
const ipc = (...msgs: object[]) => Buffer.from(msgs.map((m) => `${JSON.stringify(m)}\n`).join(""));
/** The contract's framing (protos/farm/v1/worker.proto). */
const frames = (...msgs: WorkerToAgent[]) => Buffer.concat(msgs.map((m) => framed(encodeToAgent(m))));

const cstr = (s: Session, text: string) => s.array(new Uint8Array(Buffer.from(`${text}\0`)));

async function loaded(s: Session, m: CompiledModule): Promise<RemoteModule> {
  await s.upload(m);
  return s.loadModule(m.name);
}

async function call(s: Session, mod: RemoteModule, fn: string, ...args: Array<number | Awaited<ReturnType<Session["array"]>>>): Promise<number> {
  const out = await s.array({ shape: [1], dtype: "int32" });
  await mod.getFunction(fn)(...args, out);
  return ((await out.toArray()) as Int32Array)[0]!;
}

/** Writes `bytes` on the worker's `fd` from inside the kernel. A breach may end the session before the call answers. */
async function write(s: Session, mod: RemoteModule, fd: number, bytes: Buffer): Promise<void> {
  try {
    const arr = await s.array(new Uint8Array(bytes));
    await call(s, mod, "raw_write", fd, arr, bytes.length);
  } catch (err) {
    if (!(err instanceof FarmError)) throw err;
  }
}

async function attack(s: Session, mod: RemoteModule, a: Attack): Promise<void> {
  if (a.fd3) await write(s, mod, 3, a.fd3);
  if (a.fd4) await write(s, mod, 4, a.fd4);
}

/** The error the session ends with, once it has ended. */
async function endOf(s: Session): Promise<FarmError> {
  return waitFor("the attacker's session ended", async () => {
    try {
      await s.listdir();
      return undefined;
    } catch (err) {
      return err instanceof FarmError ? err : undefined;
    }
  });
}

describe(
  "a kernel on its worker's channel to the agent",
  { skip: IS_ROOT ? false : "needs root: the attacks are those of a kernel in a sandboxed worker of a root agent (own uids, tmpfs folders)" },
  () => {
    let farm: Awaited<ReturnType<typeof startFarm>>;
    let attacks: CompiledModule;
    let vadd: CompiledModule;
    let scratch: string;

    before(async () => {
      [attacks, vadd] = await Promise.all([compileAttacks(), compileVadd()]);
      scratch = mkdtempSync(join(tmpdir(), "kfarm-attack-"));
    });
    after(() => rmSync(scratch, { recursive: true, force: true }));
    // A farm of its own for each attack: one that takes the agent down (as each did before this contract) fails its own test only.
    beforeEach(async () => {
      // At info: the agent's "worker output" lines are written (the flood's test counts them).
      farm = await startFarm(["cpu:key=cpu,name=a,zone=a", "cpu:key=cpu,name=b,zone=b"], {
        // The board's health must say what the attacks did to it; a new worker's start canary run slower on this
        // loaded machine (1.5× once, in a full run) is not that, so canary times are kept but not judged here.
        trackerArgs: ["--max-canary-drift", "0"],
        agentArgs: ["--canary-interval-ms", "0"],
        agentEnv: { KFARM_LOG: "info" },
      });
    });
    afterEach(() => farm.stop());

    /** The victim: a session on board b that loaded vadd before the attack and must compute after it. */
    async function victim(): Promise<{ s: Session; check(): Promise<void> }> {
      const s = await farm.client.request("cpu", { labels: { zone: "b" }, deadlineMs: 20_000 });
      const f = (await loaded(s, vadd)).getFunction("vadd");
      return {
        s,
        async check() {
          const [a, b, c] = await Promise.all([
            s.array(new Float32Array([1, 2])),
            s.array(new Float32Array([3, 4])),
            s.array({ shape: [2], dtype: "float32" }),
          ]);
          await f(a, b, c, 2);
          assert.deepEqual([...((await c.toArray()) as Float32Array)], [4, 6], "the other tenant's session no longer computes");
        },
      };
    }

    /** Runs `a` from a session on board a, with a victim on board b; returns how the attacker's session ended. */
    async function run(
      a: (attacker: Session, victim: Session) => Attack,
      prepare?: (s: Session, mod: RemoteModule) => Promise<void>,
    ): Promise<{ end: FarmError; pid: number }> {
      const agentPid = farm.agent.proc.pid;
      const v = await victim();
      const s = await farm.client.request("cpu", { labels: { zone: "a" }, deadlineMs: 20_000 });
      try {
        const mod = await loaded(s, attacks);
        const pid = await call(s, mod, "my_pid");
        await prepare?.(s, mod);
        await attack(s, mod, a(s, v.s));
        const end = await endOf(s);
        assert.equal(farm.agent.proc.exitCode, null, `the agent died: ${farm.agent.stderr().slice(-2000)}`);
        assert.equal(farm.agent.proc.pid, agentPid);
        await v.check();
        // The board serves the next tenant, on another process than the attacker's.
        const next = await farm.client.request("cpu", { labels: { zone: "a" }, deadlineMs: 20_000 });
        try {
          const m = await loaded(next, attacks);
          assert.notEqual(await call(next, m, "my_pid"), pid, "the attacker's process served the next session");
        } finally {
          await next.close();
        }
        const board = (await farm.client.summary()).boards.find((b) => b.labels.zone === "a")!;
        assert.equal(board.health, "healthy", `board a is ${board.health}: ${JSON.stringify(board)}`);
        return { end, pid };
      } finally {
        await s.close().catch(() => {});
        await v.s.close();
      }
    }

    const brokeProtocol = (e: FarmError, what: RegExp) => {
      assert.equal(e.code, "PROTOCOL_ERROR", `${e.code}: ${e.message}`);
      assert.match(e.message, /the session's worker broke the agent's protocol: /);
      assert.match(e.message, what);
    };

    it("bytes that are no message end only the sender's session, and the agent lives (item 2)", async () => {
      const text = Buffer.from("this is not json\n");
      // On fd 4 the text's first four bytes read as a length of ~1.9 GB: over the limit before a byte more is taken in.
      brokeProtocol((await run(() => ({ fd3: text, fd4: text }))).end, /a frame of \d+ bytes is over the limit of 65536/);
      brokeProtocol((await run(() => ({ fd3: text, fd4: framed(Buffer.from([0xff, 0xff, 0xff, 0xff])) }))).end, /does not decode/);
    });

    it("a message with fields out of the contract ends only the sender's session (item 2)", async () => {
      const end = (
        await run(() => ({
          fd3: ipc({ t: "counters", bogus: 1 }),
          fd4: frames({ counters: { calls: 1, errors: { BOGUS: 1 } } }),
        }))
      ).end;
      brokeProtocol(end, /counters name the unknown error code "BOGUS"/);
    });

    it("a kernel cannot end another tenant's session: it ends its own (item 3)", async () => {
      // A kernel reads the victim's id in /proc/self/mountinfo (session folders are tmpfs mounts named by it); the test knows it.
      const error = { code: "RUNTIME_CRASH", message: "pwned: your session was ended by another tenant" };
      const end = (
        await run((_, victim) => ({
          fd3: ipc({ t: "ended", sessionId: victim.id, reusable: true, error }),
          fd4: frames({ ended: { session_id: victim.id, reusable: true, error } }),
        }))
      ).end;
      brokeProtocol(end, /ended for session \S+, which it does not serve/);
    });

    it("a kernel's lane bytes that lie end only its own session: another session's, beyond any lane, not a count, going down (issue 32)", async () => {
      brokeProtocol(
        (await run((_, victim) => ({ fd4: frames({ lane_bytes: { session_id: victim.id, to_board: 1, from_board: 1 } }) }))).end,
        /lane_bytes for session \S+, which it does not serve/,
      );
      brokeProtocol((await run((self) => ({ fd4: frames({ lane_bytes: { session_id: self.id, to_board: 1e15, from_board: 0 } }) }))).end, /to_board grew by/);
      brokeProtocol(
        (await run((self) => ({ fd4: frames({ lane_bytes: { session_id: self.id, to_board: 0, from_board: Number.NaN } }) }))).end,
        /from_board NaN is not a byte count/,
      );
      brokeProtocol(
        (
          await run((self) => ({
            fd4: frames(
              { lane_bytes: { session_id: self.id, to_board: 1 << 30, from_board: 0 } },
              { lane_bytes: { session_id: self.id, to_board: 1, from_board: 0 } },
            ),
          }))
        ).end,
        /to_board went down from 1073741824 to 1/,
      );
    });

    it("a kernel cannot fake canary verdicts: the board is not quarantined (item 4)", async () => {
      const verdict = { t: "canary", ok: false, detail: "the attacker says this board is broken", durationMs: 1 };
      const end = (
        await run(() => ({
          fd3: ipc(verdict, verdict, verdict),
          fd4: frames(...[1, 2, 3].map(() => ({ canary: { ran: true, ok: false, detail: verdict.detail, duration_ms: 1 } }))),
        }))
      ).end;
      brokeProtocol(end, /a canary verdict from a worker that loaded a tenant's native code/);
    });

    it("a kernel's word that its process may serve again, or that it will exit, is not believed (item 4)", async () => {
      // Its own session, ended with reusable: true: in scope, so no breach; but the next session gets a new process (checked
      // by run()), and the agent does not wait for this one to exit by itself: an atexit handler keeps it from ever finishing.
      const { end, pid } = await run(
        (attacker) => ({
          fd3: ipc({ t: "ended", sessionId: attacker.id, reusable: true }),
          fd4: frames({ ended: { session_id: attacker.id, reusable: true } }),
        }),
        async (s, mod) => assert.equal(await call(s, mod, "linger"), 0),
      );
      assert.notEqual(end.code, "PROTOCOL_ERROR", end.message);
      await waitFor(
        "the attacker's process gone",
        async () => !existsSync(`/proc/${pid}`) || /^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8")),
        5000,
      );
    });

    it("a kernel that floods its output floods neither the agent's log nor its event loop; its session reads the last 1 MiB", async () => {
      const v = await victim();
      const s = await farm.client.request("cpu", { labels: { zone: "a" }, deadlineMs: 20_000 });
      try {
        const mod = await loaded(s, attacks);
        const before = farm.agent.stderr().length;
        const flood = 32 << 20;
        assert.equal(await call(s, mod, "flood", 1, flood), flood);
        await v.check();
        assert.equal(await s.output(), "A".repeat(1 << 20), "the session's host reads the last 1 MiB of what its kernel printed");
        // The log accounts for every byte in a few lines of its own, each showing at most 2,048 characters of it.
        const lines = await waitFor("the flood's bytes accounted for in the agent's log", () => {
          const outputs = farm.agent
            .stderr()
            .slice(before)
            .split("\n")
            .filter((l) => l.trim() !== "")
            .map((l) => JSON.parse(l) as { msg: string; session?: string; output?: string; bytes?: number; dropped?: number })
            .filter((r) => r.msg === "worker output" && r.session === s.id);
          return outputs.reduce((n, r) => n + r.bytes! + (r.dropped ?? 0), 0) === flood && outputs;
        });
        for (const r of lines) assert.ok(/^A{1,2048}$/.test(r.output!), `a bounded excerpt: ${r.output!.length} characters`);
        const logged = farm.agent.stderr().length - before;
        assert.ok(logged < 256 << 10, `the agent logged ${logged} bytes for a 32 MiB flood`);
      } finally {
        await s.close();
        await v.s.close();
      }
    });

    it("a kernel cannot make the root agent write outside its session's folder (item 1)", async () => {
      const target = join(scratch, "root-owned");
      writeFileSync(target, "original", { mode: 0o644 });
      const payload = Buffer.from("the attacker's bytes");
      const sha256 = createHash("sha256").update(payload).digest("hex");
      const s = await farm.client.request("cpu", { labels: { zone: "a" }, deadlineMs: 20_000 });
      try {
        const mod = await loaded(s, attacks);
        await s.upload(payload, "payload.bin");
        // The names the agent picks for stored files, taken first by links to the target: never followed.
        for (let i = 0; i < 4; i++) assert.equal(await call(s, mod, "make_link", await cstr(s, target), await cstr(s, `.module-store-${i}`)), 0);
        const climb = "../".repeat(40);
        await attack(s, mod, {
          fd3: ipc(
            { t: "store-keep", id: 1, name: "payload.bin", sha256 },
            { t: "store-take", id: `x/${climb}${target.slice(1)}`, sha256, size: payload.length },
          ),
          fd4: frames({ store_keep: { id: 1, name: "payload.bin", sha256 } }, { store_take: { id: 2, sha256, size: payload.length } }),
        });
        // The agent took the request as far as its hand-out (a link in its own store), and then refused the name.
        // Hand-outs are kept by session folder (its name: the folder was made while the worker was idle).
        const folder = basename(cwdOf(Number((await s.stats()).info.worker_pid)));
        const handed = join(tmpdir(), `kfarm-agent-${farm.agent.proc.pid}`, "store", "handed", folder, sha256);
        await waitFor("the agent handled the store requests", async () => existsSync(handed) || readFileSync(target, "utf8") !== "original");
        await s.listdir(); // one more round trip through the worker, after the agent's answer
        assert.equal(readFileSync(target, "utf8"), "original", "the root agent wrote the kernel's bytes outside the session");
        assert.ok(lstatSync(target).isFile() && !lstatSync(target).isSymbolicLink());
        assert.deepEqual((await s.listdir()).map((e) => e.name).sort(), [attacks.name, "payload.bin"].sort());
      } finally {
        await s.close();
      }
    });
  },
);
