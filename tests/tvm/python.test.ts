/**
 * The Python suite (tests/tvm/test_tvm_tracker.py: a TVM client and server
 * written from the protocol description in Python, against a real tracker)
 * under node's test runner, so `npm test` runs it with Debian's Python
 * (standard library only). It skips, saying so, where /usr/bin/python3 is
 * missing.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { it } from "node:test";

const PYTHON = "/usr/bin/python3";
const ROOT = fileURLToPath(new URL("../..", import.meta.url));

it(
  "the Python TVM client and server (tests/tvm/test_tvm_tracker.py) pass against a real tracker",
  { skip: existsSync(PYTHON) ? false : `${PYTHON} is not installed (Debian's python3)`, timeout: 300_000 },
  async () => {
    const child = spawn(PYTHON, ["-m", "unittest", "discover", "-s", "tests/tvm", "-p", "test_*.py", "-v"], {
      cwd: ROOT,
      env: { ...process.env, KFARM_NODE: process.execPath },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    child.stderr.on("data", (c: Buffer) => (out += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    assert.equal(code, 0, out);
    const ran = /Ran (\d+) tests?/.exec(out);
    assert.ok(ran && Number(ran[1]) >= 6, `the suite ran its tests:\n${out}`);
    assert.doesNotMatch(out, /skipped/, out);
  },
);
