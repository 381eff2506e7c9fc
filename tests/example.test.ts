/** The README's host script runs as written, importing from "kernelfarm". */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { it } from "node:test";

const run = promisify(execFile);

it("examples/vadd.ts runs on an embedded farm and gets the right answer", async () => {
  const script = fileURLToPath(new URL("../examples/vadd.ts", import.meta.url));
  const { stdout } = await run(process.execPath, ["--import", "tsx", script], { env: { ...process.env, KFARM_LOG: "error" }, timeout: 60_000 });
  assert.match(stdout, /c\[12345\] = 12346 \(expected 12346\)/);
  assert.match(stdout, /mean \(ms\)\s+median \(ms\)/);
});
