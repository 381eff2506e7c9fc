/**
 * The README's snippets do what they say, run as a newcomer would run them:
 * the VTA host script (packed shapes included) on a simulator board, the
 * Security quick start on three machines of their own (network namespaces
 * with their own names, so `tracker.lab` and `gpu-box-1.lab` resolve as in the
 * text) ending in a direct lane over TLS, the Python install line naming
 * what the Python suite needs, and the disassembler's flags explained where
 * a reader meets them.
 */
import assert from "node:assert/strict";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "./helpers/suites.ts";
import { spawnNode, startAgentProcess, startTrackerProcess, waitForLine, type AgentProcess, type TrackerProcess } from "./helpers/processes.ts";
import { PYTHON_SUITE_PACKAGES } from "./helpers/python-suite.ts";
import { IP } from "./helpers/ip.ts";
import { NetBed, netBedUnavailable } from "./multihost/netbed.ts";
import { vtaDisasm } from "../cli/vta.ts";

const REPO = fileURLToPath(new URL("..", import.meta.url));
const README = readFileSync(join(REPO, "README.md"), "utf8");

/** The first fenced block of `lang` after `marker` in the README. */
function blockAfter(marker: string, lang: string): string {
  const at = README.indexOf(marker);
  assert.ok(at >= 0, `README.md no longer has "${marker}"`);
  const m = new RegExp("```" + lang + "\\n([\\s\\S]*?)```").exec(README.slice(at));
  assert.ok(m, `README.md has no \`\`\`${lang} block after "${marker}"`);
  return m[1]!;
}

/** Runs to its end; its stdout, or a failure with both streams. */
function run(cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): string {
  const r = spawnSync(cmd, args, { cwd: opts.cwd, env: opts.env, encoding: "utf8", timeout: opts.timeoutMs ?? 60_000 });
  assert.equal(r.status, 0, `${cmd} ${args.join(" ")} failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

describe("the README's VTA host script", () => {
  let tracker: TrackerProcess;
  let agent: AgentProcess;
  let dir: string;
  before(async () => {
    tracker = await startTrackerProcess();
    agent = await startAgentProcess(tracker.address, ["vta-sim:key=vta"]);
    // Inside the repository, so that `from "kernelfarm"` resolves as it does for a user's script in a project.
    dir = mkdtempSync(join(REPO, "tests", ".readme-"));
  });
  after(async () => {
    rmSync(dir, { recursive: true, force: true });
    await agent?.stop();
    await tracker?.stop();
  });

  it("runs as written, with the packed shapes it states, and prints the convolution's values", () => {
    const script = blockAfter("## VTA", "ts");
    assert.match(script, /"127\.0\.0\.1:9190"/);
    const file = join(dir, "vta.ts");
    writeFileSync(file, script.replace('"127.0.0.1:9190"', JSON.stringify(tracker.address)));
    const out = run(process.execPath, ["--import", "tsx", file], { cwd: REPO, env: { ...process.env, KFARM_LOG: "error" } });
    // A corner sees 2×2 taps of 64 ones, the inside 3×3: (256 >> 8, 576 >> 8).
    assert.match(out, /^1 2$/m, out);
    assert.match(out, /gemm_counter: \d+/, out);
  });
});

describe("the README's install lines and the disassembler's legend", () => {
  it("the Python apt lines name every Debian package the Python suite needs, so npm test does not skip it", () => {
    for (const doc of ["README.md", "python/README.md"]) {
      const text = readFileSync(join(REPO, doc), "utf8");
      const named = new Set([...text.matchAll(/^apt-get install (.*)$/gm)].flatMap((m) => m[1]!.split("#")[0]!.trim().split(/\s+/)));
      for (const pkg of Object.values(PYTHON_SUITE_PACKAGES)) assert.ok(named.has(pkg), `${doc}'s apt-get lines do not install ${pkg}`);
    }
  });

  it("kfarm vta disasm explains every dependency flag it prints, and docs/vta-compiler.md explains every column", async () => {
    const text = await vtaDisasm(undefined, { tutorial: "convolution_opt" });
    const used = new Set([...text.matchAll(/^\s+\d+\s+\S.*?\s((?:pp|pn|Pp|Pn)(?:,(?:pp|pn|Pp|Pn))*)$/gm)].flatMap((m) => m[1]!.split(",")));
    assert.deepEqual([...used].sort(), ["Pn", "Pp", "pn", "pp"], "the tutorial's stream uses all four flags");
    const doc = readFileSync(join(REPO, "docs", "vta-compiler.md"), "utf8");
    for (const [flag, field] of [
      ["pp", "pop_prev"],
      ["pn", "pop_next"],
      ["Pp", "push_prev"],
      ["Pn", "push_next"],
    ] as const) {
      assert.match(text, new RegExp(`^;\\s+${flag}\\s+${field}: \\S`, "m"), `the disassembly's legend explains ${flag}`);
      assert.match(doc, new RegExp(`\\| \`${flag}\` \\| ${field} \\| \\w`), `docs/vta-compiler.md's table explains ${flag}`);
    }
    for (const column of ["sram", "y", "x", "s", "pad", "uop[begin,end)", "out N (d,s,w)"])
      assert.ok(doc.includes(`\`${column}`), `docs/vta-compiler.md explains the ${column} field`);
  });
});

// ---------------------------------------------------------------------------------------------------------------

const bedSkip = netBedUnavailable();
/** The machines of the quick start: the README's name for each, and the bed's host. */
const MACHINES = { "tracker.lab": "tracker", "gpu-box-1.lab": "gpu", user: "user" } as const;

/** The quick start's shell block: commands by machine (continuations joined, trailing comments dropped), and the comment lines. */
function securityQuickStart(): { commands: Record<string, string[]>; comments: Record<string, string> } {
  const block = blockAfter("A farm across two machines with TLS and tokens:", "sh").replace(/\\\n\s*/g, "");
  const commands: Record<string, string[]> = {};
  const comments: Record<string, string> = {};
  let machine = "";
  for (const line of block.split("\n").filter((l) => l.trim())) {
    const heading = /^# (\S+?)(?:,|:|\s|$)(.*)$/.exec(line);
    if (heading) {
      machine = heading[1] === "a" ? "user" : heading[1]!;
      assert.ok(machine in MACHINES, `the quick start names a machine the test does not know: ${line}`);
      comments[machine] = line;
      continue;
    }
    (commands[machine] ??= []).push(line.replace(/\s+#.*$/, ""));
  }
  return { commands, comments };
}

describe("the README's Security quick start, on machines of their own", { skip: bedSkip, timeout: 240_000 }, () => {
  let bed: NetBed;
  const root = mkdtempSync(join(tmpdir(), "kfarm-readme-security-"));
  const dirs = Object.fromEntries(Object.keys(MACHINES).map((m) => [m, join(root, m)])) as Record<keyof typeof MACHINES, string>;
  const running: ChildProcess[] = [];
  const etc: string[] = [];

  before(async () => {
    bed = await NetBed.create(Object.values(MACHINES));
    // `ip netns exec` mounts /etc/netns/NS/hosts over /etc/hosts: each machine resolves the quick start's names.
    const hosts = `127.0.0.1 localhost\n${bed.host("tracker").address} tracker.lab\n${bed.host("gpu").address} gpu-box-1.lab\n`;
    for (const host of Object.values(MACHINES)) {
      const d = join("/etc/netns", bed.host(host).ns);
      mkdirSync(d, { recursive: true });
      writeFileSync(join(d, "hosts"), hosts);
      etc.push(d);
    }
    // `kfarm` on the PATH, as `npm install -g` would put it.
    mkdirSync(join(root, "bin"));
    writeFileSync(join(root, "bin", "kfarm"), `#!/bin/sh\nexec "${process.execPath}" "${join(REPO, "bin", "kfarm.mjs")}" "$@"\n`);
    chmodSync(join(root, "bin", "kfarm"), 0o755);
    for (const d of Object.values(dirs)) mkdirSync(d);
  });
  after(async () => {
    const exited = running.map((p) => (p.exitCode === null && p.signalCode === null ? new Promise((r) => p.once("exit", r)) : undefined));
    for (const p of running) {
      try {
        process.kill(-p.pid!, "SIGTERM");
      } catch {
        // the group is gone already
      }
    }
    await Promise.all(exited);
    await bed?.destroy();
    for (const d of etc) rmSync(d, { recursive: true, force: true });
    rmSync(root, { recursive: true, force: true });
  });

  /**
   * A command line of the README in a machine's namespace and folder, with `kfarm` on the PATH. `exec env` makes
   * the command (through the kfarm script, which execs node) the spawned process itself, so that stopping it
   * stops the tracker or agent, not a shell above it; the process group goes too (after()).
   */
  function shell(machine: keyof typeof MACHINES, line: string): [string, string[], { cwd: string; env: NodeJS.ProcessEnv; detached: true }] {
    const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${join(root, "bin")}:${process.env.PATH}`, KFARM_LOG: "error" };
    for (const k of ["KFARM_TOKEN", "KFARM_TLS_CA", "KFARM_TLS_CERT", "KFARM_TLS_KEY", "KFARM_TRACKER"]) delete env[k];
    return [IP, ["netns", "exec", bed.host(MACHINES[machine]).ns, "sh", "-c", `exec env ${line}`], { cwd: dirs[machine], env, detached: true }];
  }

  it("every machine's commands run as written, and the user's session gets a direct lane over TLS", async () => {
    const { commands, comments } = securityQuickStart();
    assert.deepEqual(Object.keys(commands).sort(), ["gpu-box-1.lab", "tracker.lab"], JSON.stringify(commands));

    // The tracker's machine: certificates, tokens (printed once: kept by the name they were made for), the tracker.
    const tokens: Record<string, string> = {};
    for (const line of commands["tracker.lab"]!) {
      if (/^kfarm tracker\b/.test(line)) {
        const p = spawn(...shell("tracker.lab", line));
        running.push(p);
        await waitForLine(p, /listening on \S+:9190 \(TLS\)/, "the quick start's tracker", () => "");
        continue;
      }
      const out = run(...shell("tracker.lab", line));
      const made = /--name (\S+) --kind (\w+)/.exec(line);
      if (made) {
        const token = /\bkf1\.[\w.-]+/.exec(out);
        assert.ok(token, `\`${line}\` printed no token:\n${out}`);
        tokens[made[2]!] = token[0];
      }
    }
    assert.ok(tokens.agent && tokens.client, `the quick start makes an agent and a client token: ${JSON.stringify(Object.keys(tokens))}`);

    // The GPU host: what its comment says to copy, then the agent, with its token. A CPU board stands in for the GPU.
    const copies = [...comments["gpu-box-1.lab"]!.matchAll(/\btls\/[\w.-]+/g)].map((m) => m[0]);
    assert.ok(copies.length > 0, `the GPU host's comment says what to copy: ${comments["gpu-box-1.lab"]}`);
    for (const f of copies) copyFileSync(join(dirs["tracker.lab"], f), join(dirs["gpu-box-1.lab"], basename(f)));
    for (const line of commands["gpu-box-1.lab"]!) {
      assert.match(line, /^KFARM_TOKEN=kf1\.… kfarm agent /, line);
      const p = spawn(...shell("gpu-box-1.lab", line.replace("kf1.…", tokens.agent).replace(/--board cuda:all:key=(\w+)/, "--board cpu:key=$1")));
      running.push(p);
      let err = "";
      p.stderr!.on("data", (c: Buffer) => (err += c.toString()));
      await waitForLine(p, /kfarm agent .* serving/, "the quick start's agent", () => err);
    }

    // The user: the environment its comment gives, then connectTracker("tracker.lab:9190") as usual.
    const user = /a user: (KFARM_TOKEN=kf1\.… KFARM_TLS_CA=ca\.crt), then connectTracker\("(tracker\.lab:9190)"\)/.exec(comments.user!);
    assert.ok(user, `the user's comment changed: ${comments.user}`);
    copyFileSync(join(dirs["tracker.lab"], "tls", "ca.crt"), join(dirs.user, "ca.crt"));
    const script = join(dirs.user, "user.mts");
    writeFileSync(
      script,
      [
        `import { connectTracker } from ${JSON.stringify(join(REPO, "host-sdk", "index.ts"))};`,
        `import { checkVadd } from ${JSON.stringify(join(REPO, "tests", "helpers", "kernels.ts"))};`,
        `const tracker = await connectTracker(${JSON.stringify(user[2])});`,
        `const s = await tracker.request("h100", { deadlineMs: 30_000 });`,
        `await checkVadd(s);`,
        `console.log(JSON.stringify({ lane: s.lane, note: s.laneNote ?? "" }));`,
        `await s.close();`,
        `tracker.close();`,
      ].join("\n"),
    );
    const env = { KFARM_TOKEN: tokens.client, KFARM_TLS_CA: join(dirs.user, "ca.crt") };
    const p = spawnNode(["--import", "tsx", script], { netns: bed.host("user").ns, env });
    let out = "";
    let err = "";
    p.stdout!.on("data", (c: Buffer) => (out += c.toString()));
    p.stderr!.on("data", (c: Buffer) => (err += c.toString()));
    const code = await new Promise((r) => p.once("exit", r));
    assert.equal(code, 0, `the user's script failed:\n${out}\n${err}`);
    const answer = JSON.parse(out.trim().split("\n").pop()!) as { lane: string; note: string };
    assert.deepEqual(answer, { lane: "direct", note: "" }, "the quick start's agent serves the direct lane (TLS with its own certificate)");
  });
});
