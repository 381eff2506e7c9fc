/**
 * A skipped suite counts each of its tests as skipped, with the reason in the
 * output (tests/helpers/suites.ts): CI's summary must show what did not run.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, it } from "node:test";

const FIXTURE = fileURLToPath(new URL("./fixtures/skipped-suite.ts", import.meta.url));

describe("skipped suites", () => {
  it("count every test they hold as skipped, say why, and run none of their tests or hooks", async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", "--test", "--test-reporter=tap", FIXTURE], {
      env: { ...process.env, NODE_TEST_CONTEXT: undefined },
    });
    assert.match(stdout, /^# tests 4$/m, stdout);
    assert.match(stdout, /^# pass 1$/m, stdout);
    assert.match(stdout, /^# skipped 3$/m, stdout);
    assert.match(stdout, /^# fail 0$/m, stdout);
    assert.match(stdout, /SKIP needs a thing this machine lacks: no such thing here \(apt-get install thing\)/, stdout);
    assert.equal(stdout.match(/ok \d+ - (one|two|three) # SKIP no such thing here/g)?.length, 3, stdout);
  });
});
