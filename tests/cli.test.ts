/**
 * The README's main command and the VTA disassembler, as a user runs them;
 * `kfarm status` fitted to the terminal, and every command's tracker
 * defaulting to KFARM_TRACKER, else where a default tracker listens.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, it } from "node:test";
import { compileCpu, connectTracker, vtaMatmul } from "../host-sdk/index.ts";
import { freePort, startFarm, startProgram, startTrackerProcess, waitFor } from "./helpers/processes.ts";

const run = promisify(execFile);
const KFARM = fileURLToPath(new URL("../bin/kfarm.mjs", import.meta.url));
/** The environment a user's shell gives: none of the test's KFARM_LOG or of a tracker it may know. */
const { KFARM_LOG: _level, KFARM_TRACKER: _tracker, COLUMNS: _columns, ...USER_ENV } = process.env;
const kfarmWith = (env: Record<string, string>, ...args: string[]) =>
  run(process.execPath, [KFARM, ...args], { env: { ...USER_ENV, KFARM_LOG: "error", ...env }, timeout: 120_000 });
const kfarm = (...args: string[]) => kfarmWith({}, ...args);

describe("kfarm", () => {
  it("demo (npm start) runs the VTA conv2d tutorial on a simulator board and prints TVM's statistics; no log lines on stdout, none below warn on stderr", async () => {
    const { stdout, stderr } = await run(process.execPath, [KFARM, "demo"], { env: USER_ENV, timeout: 120_000 });
    assert.deepEqual(
      stdout.split("\n").filter((l) => l.startsWith("{")),
      [],
      "no JSON log line on stdout",
    );
    const logged = stderr
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as { level: number; msg: string });
    assert.deepEqual(
      logged.filter((l) => l.level < 40),
      [],
      "the embedded farm logs at warn unless KFARM_LOG asks",
    );
    assert.match(stdout, /output equals the reference/);
    const want: Record<string, number> = {
      inp_load_nbytes: 114688,
      wgt_load_nbytes: 1179648,
      acc_load_nbytes: 0,
      uop_load_nbytes: 1144,
      out_store_nbytes: 50176,
      gemm_counter: 451584,
      alu_counter: 9408,
    };
    for (const [name, value] of Object.entries(want)) assert.match(stdout, new RegExp(`\\t${name}\\s*:\\s+${value}\\n`), name);
    assert.match(stdout, /CPU vadd of 1048576 floats on board local\/cpu0: correct/);
  });

  it("vta disasm prints a tutorial's stream and a module file's, naming buffers", async () => {
    const { stdout } = await kfarm("vta", "disasm", "--tutorial", "matrix_multiply", "--uops");
    assert.match(stdout, /matrix_multiply: run 0, 56 instructions, 2 micro-ops/);
    assert.match(stdout, /\n\s+55\s+FINISH/);
    assert.match(stdout, /uops: \(0,0,0\)/);
    const dir = await mkdtemp(join(tmpdir(), "kf-disasm-"));
    const file = join(dir, "mm.kfm");
    await writeFile(file, vtaMatmul({ batch: 1, inFeatures: 32, outFeatures: 32 }).bytes);
    const fromFile = (await kfarm("vta", "disasm", file)).stdout;
    assert.match(fromFile, /LOAD_WGT sram \d+ W\+\d+/);
  });

  it("vta disasm refuses a CPU module and a missing file with clear errors", async () => {
    const dir = await mkdtemp(join(tmpdir(), "kf-disasm-"));
    const file = join(dir, "cpu.kfm");
    await writeFile(file, (await compileCpu("void f(void) {}", { functions: { f: [] } })).bytes);
    await assert.rejects(kfarm("vta", "disasm", file), (e: { stderr: string }) => /is a cpu module, not a VTA module \[TARGET_MISMATCH\]/.test(e.stderr));
    await assert.rejects(kfarm("vta", "disasm", join(dir, "nope.kfm")), (e: { stderr: string }) =>
      /cannot read module .*nope\.kfm.*\[NOT_FOUND\]/.test(e.stderr),
    );
  });

  it("refuses bad agent options as the user's mistake, naming the option (not INTERNAL)", async () => {
    const refused = async (args: string[], why: RegExp) =>
      assert.rejects(
        kfarm("agent", "--tracker", "127.0.0.1:1", ...args),
        (e: { stderr: string; code: number }) => e.code !== 0 && why.test(e.stderr) && !/INTERNAL|RangeError/.test(e.stderr),
      );
    await refused(
      ["--board", "cpu:key=cpu,name=a", "--board", "cpu:key=cpu,name=a"],
      /--board: two boards are named "a"; give each a distinct name=.*\[INVALID_ARGUMENT\]/,
    );
    await refused(["--board", "cpu:key=cpu", "--metrics-port", "70000"], /metrics-port.*\[INVALID_ARGUMENT\]/);
  });

  it("refuses a canary drift bound that would make every board suspect, or is no number, naming the option", async () => {
    const refused = async (value: string, why: RegExp) =>
      assert.rejects(
        kfarm("tracker", "--port", "0", "--max-canary-drift", value),
        (e: { stderr: string; code: number }) => e.code !== 0 && why.test(e.stderr) && !/INTERNAL|RangeError/.test(e.stderr),
      );
    await refused("1", /tracker option maxCanaryDrift must be above 1 .*got 1 \[INVALID_ARGUMENT\]/);
    await refused("fast", /--max-canary-drift.*"fast" is not a number/);
  });

  it("a second tracker on a used port says so in one line, with what to do", async () => {
    const first = await startTrackerProcess();
    try {
      const second = await kfarm("tracker", "--port", String(first.port)).then(
        () => undefined,
        (e: { stderr: string; code: number }) => e,
      );
      assert.ok(second, "the second tracker must fail");
      assert.notEqual(second.code, 0);
      assert.deepEqual(second.stderr.trim().split("\n"), [
        `kfarm: tracker cannot listen on 127.0.0.1:${first.port}: the port is in use (another tracker?); stop it, or give another --port (0: any free port) [UNAVAILABLE]`,
      ]);
    } finally {
      await first.stop();
    }
  });

  it("--version prints the package's version, and `kfarm status` shows the tracker's", async () => {
    const { version } = JSON.parse(await readFile(fileURLToPath(new URL("../package.json", import.meta.url)), "utf8")) as { version: string };
    assert.equal((await kfarm("--version")).stdout.trim(), version);
    const tracker = await startTrackerProcess();
    try {
      const { stdout } = await kfarm("status", "--tracker", tracker.address);
      assert.match(
        stdout.split("\n")[0]!,
        new RegExp(`^Tracker address ${tracker.address.replace(/\./g, "\\.")} \\(kernelfarm ${version.replace(/\./g, "\\.")}, up \\d+ s\\)$`),
      );
    } finally {
      await tracker.stop();
    }
  });

  it("status fits its table to --width or $COLUMNS, cutting a long health reason with an ellipsis; --json has it whole; the tracker is KFARM_TRACKER's", async () => {
    const farm = await startFarm(["cpu:key=cpu,name=c0"]);
    try {
      const at = { KFARM_TRACKER: farm.tracker.address };
      const [board] = (await farm.client.summary()).boards;
      const reason = `fan failing since the rack was moved; ${"the left fan spins at 900 rpm, the right one at 4000 rpm; ".repeat(3)}`.slice(0, 200);
      const quarantined = await kfarmWith(at, "board", "quarantine", board!.id, "--by", "tester", "--reason", reason);
      assert.match(quarantined.stdout, /state quarantined, health quarantined \(quarantined by tester: fan failing/);

      const whole = await kfarmWith(at, "status", "--width", "0");
      assert.ok(whole.stdout.includes(`quarantined: quarantined by tester: ${reason}`), whole.stdout);
      assert.ok(Math.max(...whole.stdout.split("\n").map((l) => l.length)) > 250, "the reason makes the table wide");

      for (const [env, args, width] of [
        [{ COLUMNS: "80" }, [], 80],
        [{ COLUMNS: "200" }, ["--width", "60"], 60],
        [{}, [], 100], // not a terminal, no COLUMNS
      ] as const) {
        const { stdout } = await kfarmWith({ ...at, ...env }, "status", ...args);
        const lines = stdout.trimEnd().split("\n");
        assert.deepEqual(
          lines.filter((l) => l.length > width),
          [],
          `every line within ${width} columns:\n${stdout}`,
        );
        assert.equal(lines[0]!.startsWith(`Tracker address ${farm.tracker.address}`), true, lines[0]);
        if (width >= 80) assert.match(stdout, new RegExp(`\\n${board!.id.replace(/[/.]/g, "\\$&")} +cpu +cpu +quarantined +quarantined: [^\\n]*…`));
        assert.match(lines.at(-1)!, new RegExp(`^\\(cells cut to fit ${width} columns`));
      }

      const json = JSON.parse((await kfarmWith({ ...at, COLUMNS: "40" }, "status", "--json")).stdout) as { boards: Array<{ health_reason: string }> };
      assert.equal(json.boards[0]!.health_reason, `quarantined by tester: ${reason}`);
    } finally {
      await farm.stop();
    }
  });

  it("with no --tracker, commands dial KFARM_TRACKER, else 127.0.0.1:9190 (where `kfarm tracker` listens by default), and say which when nothing answers", async () => {
    assert.match((await kfarm("tracker", "--help")).stdout, /--port <port> +gRPC port to bind.*\(default: 9190\)/s);
    for (const command of [["status"], ["board", "drain", "a/b"], ["token", "list"], ["vta", "program", "a/b", "x.bin"]]) {
      const help = (await kfarm(...command, "--help")).stdout.replace(/\s+/g, " ");
      assert.match(help, /--tracker <host:port> .*(default|neither flag): \$KFARM_TRACKER, else 127\.0\.0\.1:9190/, command.join(" "));
    }
    // An agent started with KFARM_TRACKER and no --tracker attaches there.
    const tracker = await startTrackerProcess();
    try {
      const agent = await startProgram(process.execPath, [KFARM, "agent", "--board", "cpu:key=from-env,name=e0", "--name", "envy"], {
        env: { ...USER_ENV, KFARM_LOG: "error", KFARM_TRACKER: tracker.address },
        ready: new RegExp(`kfarm agent envy serving e0 \\(cpu, key from-env\\) for tracker ${tracker.address.replace(/\./g, "\\.")}`),
        what: "kfarm agent",
      });
      try {
        const client = await connectTracker(tracker.address);
        try {
          await waitFor("the agent's board at KFARM_TRACKER's tracker", async () => (await client.summary()).boards.some((b) => b.id === "envy/e0"));
        } finally {
          client.close();
        }
      } finally {
        await agent.stop();
      }
    } finally {
      await tracker.stop();
    }

    const nobody = `127.0.0.1:${await freePort()}`;
    const e = await kfarmWith({ KFARM_TRACKER: nobody }, "status").then(
      () => assert.fail("a status with nothing at KFARM_TRACKER succeeded"),
      (err: { code: number; stderr: string }) => err,
    );
    assert.notEqual(e.code, 0);
    assert.match(
      e.stderr,
      new RegExp(`^kfarm: cannot reach the tracker at ${nobody}.*\\(the address ${nobody} is KFARM_TRACKER's value\\) \\[UNAVAILABLE\\]$`, "m"),
    );
  });
});
