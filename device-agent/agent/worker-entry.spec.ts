import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, lstatSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { bundleWorker } from "./worker-entry.ts";

const PACKAGE_MODULES = fileURLToPath(new URL("../../node_modules", import.meta.url));

/** Runs a worker script with plain node, outside any agent: it must load every import, then refuse to run by hand (exit 2). */
function startByHand(script: string): { status: number | null; stderr: string } {
  const env = { ...process.env };
  delete env.KFARM_WORKER;
  const r = spawnSync(process.execPath, [script], { encoding: "utf8", env, timeout: 30_000 });
  return { status: r.status, stderr: r.stderr };
}

describe("the session worker bundle", () => {
  const scratch = mkdtempSync(join(tmpdir(), "kfarm-worker-entry-"));
  after(() => rmSync(scratch, { recursive: true, force: true }));

  it("is one plain ES module that Node starts without tsx, its dependencies resolved from the package", async () => {
    const entry = await bundleWorker([join(scratch, "first")]);
    assert.equal(entry.bundled, true);
    assert.deepEqual(entry.execArgv, []);
    assert.match(entry.script, /worker-[0-9a-f]{16}\.mjs$/);
    assert.ok(existsSync(`${entry.script}.map`), "its source map beside it");
    const r = startByHand(entry.script);
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /start me through `kfarm agent`/);
    // The same sources give the same file: a second build writes nothing new.
    assert.equal((await bundleWorker([join(scratch, "first")])).script, entry.script);
  });

  it("goes to the next folder, beside a link to the package's node_modules, when the first cannot take it", async () => {
    const notADir = join(scratch, "file");
    writeFileSync(notADir, "");
    const fallback = join(scratch, "agent-scratch", "worker");
    const entry = await bundleWorker([join(notADir, "cache"), fallback]);
    assert.equal(dirname(entry.script), fallback);
    assert.ok(lstatSync(join(fallback, "node_modules")).isSymbolicLink());
    const r = startByHand(entry.script);
    assert.equal(r.status, 2, r.stderr);
    // Removing an agent's scratch folder takes the link, not the package's modules.
    rmSync(join(scratch, "agent-scratch"), { recursive: true, force: true });
    assert.ok(existsSync(join(PACKAGE_MODULES, "esbuild")));
    await assert.rejects(bundleWorker([join(notADir, "a"), join(notADir, "b")]), /no folder took the worker bundle \(.*file\/a: .*; .*file\/b: /);
  });
});
