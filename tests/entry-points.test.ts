/**
 * What each entry point loads: `kernelfarm` (host scripts) loads the host SDK
 * and the contract, not the tracker or the agent; `kernelfarm/server` loads
 * them; an embedded farm loads them when it starts.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, it } from "node:test";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const RECORDER = fileURLToPath(new URL("./fixtures/record-loads.mjs", import.meta.url));

/** The parts (top-level folders, or root files) a script loaded, with how many files of each. */
async function partsLoaded(script: string): Promise<Record<string, number>> {
  const { stderr } = await promisify(execFile)(process.execPath, ["--import", "tsx", "--import", RECORDER, "--input-type=module", "-e", script], { cwd: ROOT });
  const parts: Record<string, number> = {};
  for (const m of stderr.matchAll(/^LOADED file:\/\/(.+)$/gm)) {
    const part = m[1]!.slice(ROOT.length).split("/")[0]!;
    parts[part] = (parts[part] ?? 0) + 1;
  }
  return parts;
}

describe("entry points", () => {
  it('`import "kernelfarm"` loads the host SDK, not the tracker or the agent', async () => {
    const parts = await partsLoaded(
      `const k = await import("kernelfarm"); if (typeof k.connectTracker !== "function" || typeof k.startLocalFarm !== "function") process.exit(3);`,
    );
    assert.ok(parts["host-sdk"]! > 0 && parts.protos! > 0, JSON.stringify(parts));
    assert.equal(parts.tracker, undefined, `tracker files loaded: ${JSON.stringify(parts)}`);
    assert.equal(parts["device-agent"], undefined, `agent files loaded: ${JSON.stringify(parts)}`);
  });

  it('`import "kernelfarm/server"` gives the tracker and the agent', async () => {
    const parts = await partsLoaded(
      `const s = await import("kernelfarm/server"); if (typeof s.startTracker !== "function" || typeof s.startAgent !== "function") process.exit(3);`,
    );
    assert.ok(parts.tracker! > 0 && parts["device-agent"]! > 0, JSON.stringify(parts));
  });

  it("an embedded farm loads the servers when it starts, and works", async () => {
    const parts = await partsLoaded(
      `const { startLocalFarm } = await import("kernelfarm"); const farm = await startLocalFarm(); await farm.ready(); const s = await farm.client.request("cpu"); await s.close(); await farm.close();`,
    );
    assert.ok(parts.tracker! > 0 && parts["device-agent"]! > 0, JSON.stringify(parts));
  });
});
