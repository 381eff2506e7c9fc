/**
 * The ARM agent bundles (`npm run bundle:agent -- --arch arm64|armv7l`, for
 * VTA boards: Ultra96/ZCU104/Kria and Pynq-Z1/Z2) on this x86-64 machine,
 * under qemu-user. Each is staged without compression into a temp folder and
 * run with a PATH whose only program is `sh`, through the bundle's own
 * launchers with KFARM_EMULATOR naming qemu: Debian's node, its libraries and
 * loader from the bundle, esbuild and the session workers under qemu too.
 *
 * A tracker on this host (x64, from the sources) and an agent from the bundle
 * with a VTA board serve one session through the host SDK: TVM's
 * matrix_multiply tutorial, checked element by element against the plain
 * reference. The agent's and its session worker's resident memory is read
 * from /proc while the session is open, and printed (docs/agent-bundle.md).
 *
 * Skipped, saying why, without qemu-user or where what a bundle is built
 * from cannot be downloaded (Debian's packages, the ARM platform packages
 * from npm). Downloads are cached in dist/: a second run fetches only
 * Debian's release file.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { accessSync, constants, existsSync, readdirSync, readFileSync, realpathSync } from "node:fs";
import { chmod, mkdir, mkdtemp, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { promisify } from "node:util";
import { after, before, describe, it } from "./helpers/suites.ts";
import {
  buildBundle,
  bundleRefusal,
  DownloadError,
  TARGETS,
  APP_DIR_NAME,
  BUNDLE_DIR_NAME,
  BUNDLE_INFO_FILE,
  type BundleArch,
} from "../deploy/agent-bundle/build.ts";
import { readElf } from "../deploy/agent-bundle/elf.ts";
import { compileVta, connectTracker, VTA_TUTORIALS } from "../host-sdk/index.ts";
import { startProgram, startTrackerProcess, waitFor, waitForFreeBoards, type FarmProcess, type TrackerProcess } from "./helpers/processes.ts";
import { childrenOf, cmdlineOf, exeOf, mappingsOf, statusKiB } from "./helpers/procfs.ts";
import { firstMismatch, matmulCase } from "./helpers/vta.ts";

const run = promisify(execFile);

/** The board the ARM agent serves: an FPGA board's mmio driver on the register-level device model (docs/vta-boards.md). */
const BOARD = { flag: "vta:model:key=vta", key: "vta" } as const;

/** qemu-user's program for each bundle. */
const QEMU: Record<Exclude<BundleArch, "x64">, string> = { arm64: "qemu-aarch64", armv7l: "qemu-arm" };

/**
 * Node under qemu runs some 20-50 times slower than on this machine: on a
 * 2-vCPU VM an agent takes 30-45 s to attach and its first worker as long
 * again to be ready. Bounded, so a hang fails instead of holding CI.
 */
const EMULATED_READY_MS = 240_000;
const EMULATED_NODE_MS = 120_000;
const SESSION_MS = 180_000;

/**
 * Where qemu-user keeps the guest's memory on an x86-64 host: a 32-bit guest
 * in the low 4 GiB, a 64-bit one from 0x55_0000_0000 (its mmap base) up —
 * below where the host kernel puts qemu's own binary, heap and translation
 * cache (0x55xx_xxxx_xxxx and 0x7fxx_xxxx_xxxx). What lies below this is the
 * guest's: what node itself holds, as it would on a board.
 */
const GUEST_BELOW = 0x5000_0000_0000n;

const MiB = (kib: number) => `${(kib / 1024).toFixed(0)} MiB`;

function onPath(program: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(delimiter).filter(Boolean)) {
    try {
      accessSync(join(dir, program), constants.X_OK);
      return join(dir, program);
    } catch {
      // not here
    }
  }
  return undefined;
}

interface Memory {
  /** VmRSS of the qemu process: node and qemu together. */
  readonly rssKiB: number;
  readonly hwmKiB: number;
  /** The guest's share: resident memory below GUEST_BELOW. */
  readonly guestKiB: number;
}

/** The memory of a process that is qemu running the bundle's node from `stage`. */
function memoryOf(pid: number, stage: string): Memory {
  const maps = mappingsOf(pid);
  const node = maps.find((m) => m.name === join(stage, "lib", "node"));
  const qemu = maps.find((m) => m.name === exeOf(pid));
  assert.ok(
    node && qemu && node.start < GUEST_BELOW && qemu.start >= GUEST_BELOW,
    `process ${pid}: qemu's memory layout is not the one GUEST_BELOW assumes (node at 0x${node?.start.toString(16)}, qemu at 0x${qemu?.start.toString(16)})`,
  );
  return {
    rssKiB: statusKiB(pid, "VmRSS"),
    hwmKiB: statusKiB(pid, "VmHWM"),
    guestKiB: maps.filter((m) => m.start < GUEST_BELOW).reduce((sum, m) => sum + m.rssKiB, 0),
  };
}

const describeMemory = (m: Memory) => `VmRSS ${MiB(m.rssKiB)} (peak ${MiB(m.hwmKiB)}), of which node's own ${MiB(m.guestKiB)}`;

/** Every file under `dir`. */
function* filesUnder(dir: string): Iterable<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* filesUnder(path);
    else if (entry.isFile()) yield path;
  }
}

interface Prepared {
  readonly arch: Exclude<BundleArch, "x64">;
  readonly qemu?: string;
  readonly tmp?: string;
  readonly skip?: string;
  /** A build failure that is no download problem: the suite fails with it. */
  readonly error?: unknown;
  readonly buildLog: readonly string[];
  readonly buildMs?: number;
}

/** Builds the stage for `arch` (at collection time: whether the suite runs depends on it). */
async function prepare(arch: Exclude<BundleArch, "x64">): Promise<Prepared> {
  const qemu = onPath(QEMU[arch]);
  if (!qemu) return { arch, skip: `${QEMU[arch]} is not installed (Debian: apt-get install qemu-user)`, buildLog: [] };
  const refusal = bundleRefusal(arch);
  if (refusal) return { arch, skip: refusal, buildLog: [] };
  const tmp = await mkdtemp(join(tmpdir(), `kf-bundle-${arch}-`));
  // Readable by all, as under /opt: the agent runs as root here and starts its workers as other users (docs/sandbox.md).
  await chmod(tmp, 0o755);
  const buildLog: string[] = [];
  const t0 = performance.now();
  try {
    // A mirror out of sync (its index not the one its signed release names) is no failure of the bundle: take the index as served.
    await buildBundle({ arch, archivePath: join(tmp, `kfarm-agent-linux-${arch}.tar.xz`), compress: false, allowUnsignedIndex: true }, (line) =>
      buildLog.push(line),
    );
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    if (err instanceof DownloadError) return { arch, skip: `what the ${arch} bundle is made of cannot be downloaded: ${err.message}`, buildLog };
    return { arch, error: err, buildLog };
  }
  return { arch, qemu, tmp, buildLog, buildMs: performance.now() - t0 };
}

const prepared = [await prepare("arm64"), await prepare("armv7l")];

for (const p of prepared) {
  const target = TARGETS[p.arch];
  describe(`the ${p.arch} agent bundle under ${QEMU[p.arch]}`, { skip: p.skip ?? false }, () => {
    let stage: string;
    let env: NodeJS.ProcessEnv;
    let info: { node: string; platform: string; libraries: string[]; builtins: string[]; leftOut: Record<string, string> };
    let loader: string;

    before(async () => {
      if (p.error) throw p.error;
      console.log(`${p.arch} bundle staged in ${((p.buildMs ?? 0) / 1000).toFixed(1)} s:\n${p.buildLog.join("\n")}`);
      // The launchers name their folder without symlinks (pwd -P): so do the checks of command lines and mappings.
      stage = realpathSync(join(p.tmp!, BUNDLE_DIR_NAME));
      info = JSON.parse(readFileSync(join(stage, BUNDLE_INFO_FILE), "utf8")) as typeof info;
      loader = info.libraries.find((l) => l.startsWith("ld-linux-")) ?? "";
      // A PATH with `sh` and nothing else: no node anywhere on it; qemu by its absolute path.
      const bin = join(p.tmp!, "bin");
      await mkdir(bin);
      await symlink("/bin/sh", join(bin, "sh"));
      env = { PATH: bin, HOME: p.tmp!, KFARM_LOG: "error", KFARM_EMULATOR: p.qemu! };
    });

    after(async () => {
      if (p.tmp) await rm(p.tmp, { recursive: true, force: true });
    });

    it("holds Debian's node for the CPU with its libraries, glibc and loader, and only that CPU's native files", () => {
      assert.equal(info.platform, `linux-${p.arch}`);
      assert.match(info.node, /^v20\./);
      assert.ok(loader, `a dynamic loader among ${info.libraries.join(", ")}`);
      for (const lib of ["libc.so.6", "libnode.so.115", "libstdc++.so.6", "libicudata.so.76", loader]) {
        assert.ok(info.libraries.includes(lib), `${lib} is bundled`);
        assert.equal(readElf(join(stage, "lib", lib))?.machine, target.machine, `lib/${lib} is for ${p.arch}`);
      }
      assert.equal(readElf(join(stage, "lib", "node"))?.interpreter, `/lib/${loader}`);
      assert.ok(info.builtins.includes("cjs-module-lexer/lexer.js"), "libnode's builtins come along");
      for (const b of info.builtins) assert.ok(existsSync(join(stage, "lib", "nodejs", b)), `lib/nodejs/${b}`);
      const modules = join(stage, APP_DIR_NAME, "node_modules");
      for (const present of [`@esbuild/linux-${target.cpu}/bin/esbuild`, `@koromix/koffi-linux-${target.cpu}`, "koffi", "tsx", "msgpackr"]) {
        assert.ok(existsSync(join(modules, present)), `${present} is in the bundle`);
      }
      assert.ok(!existsSync(join(modules, "msgpackr-extract")) && "msgpackr-extract" in info.leftOut, "msgpackr-extract is left out, and BUNDLE.json says so");
      assert.ok(!existsSync(join(modules, "@esbuild", "linux-x64")) && !existsSync(join(modules, "@koromix", "koffi-linux-x64")), "no x64 platform packages");
      const foreign = [...filesUnder(join(stage, APP_DIR_NAME))].filter((f) => {
        const elf = readElf(f);
        return elf && elf.machine !== target.machine;
      });
      assert.deepEqual(foreign, [], "every native file in app/ is for the bundle's CPU");
    });

    it("its node runs under qemu with no node on the PATH, without the system's libc, and loads koffi", async () => {
      await assert.rejects(run("sh", ["-c", "command -v node"], { env }), "no node on the test PATH");
      const probe = "console.log(JSON.stringify({ version: process.version, arch: process.arch, koffi: require('koffi').version, icu: process.versions.icu }))";
      const { stdout } = await run(join(stage, "node"), ["-e", probe], { env, cwd: join(stage, APP_DIR_NAME), timeout: EMULATED_NODE_MS });
      const got = JSON.parse(stdout) as { version: string; arch: string; koffi: string; icu: string };
      assert.equal(got.version, info.node);
      assert.equal(got.arch, target.cpu);
      assert.equal(got.koffi, JSON.parse(readFileSync(join(stage, APP_DIR_NAME, "node_modules", "koffi", "package.json"), "utf8")).version);
    });

    it(`an agent under qemu attaches to a tracker on this host and serves a session on ${BOARD.flag}; resident memory`, async (t) => {
      let tracker: TrackerProcess | undefined;
      let agent: FarmProcess | undefined;
      const client = { close: () => {} };
      try {
        tracker = await startTrackerProcess();
        const t0 = performance.now();
        agent = await startProgram(join(stage, "kfarm"), ["agent", "--tracker", tracker.address, "--board", BOARD.flag], {
          env,
          ready: /kfarm agent .* serving/,
          what: `the ${p.arch} agent`,
          timeoutMs: EMULATED_READY_MS,
        });
        const agentPid = agent.proc.pid!;
        const attachedMs = performance.now() - t0;
        const tc = await connectTracker(tracker.address);
        client.close = () => tc.close();
        await waitForFreeBoards(tc, 1, BOARD.key, EMULATED_READY_MS);
        const readyMs = performance.now() - t0;

        // The launchers exec: the agent's process is qemu running the bundled loader on the bundled node,
        // and so is its worker, started through the `node` launcher (KFARM_NODE), not process.execPath (the loader).
        const qemu = realpathSync(p.qemu!);
        const throughLoader = (pid: number) => {
          assert.equal(exeOf(pid), qemu);
          const command = `${join(stage, "lib", loader)} --library-path ${join(stage, "lib")} ${join(stage, "lib", "node")} `;
          assert.ok(cmdlineOf(pid).includes(command), `process ${pid} runs ${cmdlineOf(pid)}, not ${command}…`);
        };
        throughLoader(agentPid);
        const [worker, ...more] = await waitFor("the session worker", () => {
          const kids = childrenOf(agentPid).filter((pid) => cmdlineOf(pid).includes("kernelfarm/worker-"));
          return kids.length > 0 ? kids : undefined;
        });
        assert.deepEqual(more, [], "one worker for one board");
        throughLoader(worker!);

        const spec = VTA_TUTORIALS.matrix_multiply;
        const mod = compileVta(spec);
        const c = matmulCase(spec.workload, 101);
        const s = await tc.request(BOARD.key, { deadlineMs: SESSION_MS });
        let memory: { agent: Memory; worker: Memory } | undefined;
        const t1 = performance.now();
        try {
          await s.upload(mod);
          const fn = (await s.loadModule(mod.name)).getFunction(mod.functions[0]!.name);
          const params = mod.functions[0]!.params;
          const inputs = await Promise.all(c.inputs.map((x, i) => s.array(x, params[i]!.shape!)));
          const out = await s.array({ shape: params[2]!.shape!, dtype: "int8" });
          await fn(...inputs, out);
          const packed = await out.toArray();
          assert.ok(packed instanceof Int8Array, "an int8 output");
          assert.equal(firstMismatch(c.unpack(packed), c.want), undefined, "the board's output is the reference's");
          // While the session is open: the worker that served it has loaded the module and run it.
          memory = { agent: memoryOf(agentPid, stage), worker: memoryOf(worker!, stage) };
        } finally {
          await s.close();
        }
        const sessionMs = performance.now() - t1;
        assert.ok(memory);
        t.diagnostic(
          `${p.arch}: agent attached in ${(attachedMs / 1000).toFixed(1)} s, board free in ${(readyMs / 1000).toFixed(1)} s, session (upload, load, 1x256x256 GEMM, read back) ${(sessionMs / 1000).toFixed(1)} s`,
        );
        t.diagnostic(`${p.arch} under ${QEMU[p.arch]}: agent ${describeMemory(memory.agent)}; session worker ${describeMemory(memory.worker)}`);
        for (const m of [memory.agent, memory.worker])
          assert.ok(m.guestKiB > 0 && m.guestKiB < m.rssKiB, `node's share ${m.guestKiB} KiB is part of VmRSS ${m.rssKiB} KiB`);
      } finally {
        client.close();
        await agent?.stop();
        await tracker?.stop();
      }
    });
  });
}
