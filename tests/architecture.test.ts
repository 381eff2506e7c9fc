/**
 * Dependencies point one way (DESIGN.md): tracker, device-agent and host-sdk
 * import only protos (and device-agent, host-sdk later also vta); only the
 * composition layer (root files, cli/) puts parts together.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { it } from "node:test";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const ALLOWED: Record<string, string[]> = {
  protos: [],
  tracker: ["protos"],
  "device-agent": ["protos", "vta"],
  "host-sdk": ["protos", "vta"],
};

function* sources(dir: string): Iterable<string> {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (name === "node_modules" || name === "gen") continue;
    if (statSync(path).isDirectory()) yield* sources(path);
    else if (path.endsWith(".ts") && !path.endsWith(".spec.ts")) yield path;
  }
}

it("each part imports only the parts below it", () => {
  const violations: string[] = [];
  for (const [part, allowed] of Object.entries(ALLOWED)) {
    for (const file of sources(join(ROOT, part))) {
      const text = readFileSync(file, "utf8");
      for (const m of text.matchAll(/(?:from|import)\s*\(?\s*["'](\.[^"']+)["']/g)) {
        const target = relative(ROOT, resolve(dirname(file), m[1]!)).split("/")[0]!;
        if (target !== part && !allowed.includes(target)) violations.push(`${relative(ROOT, file)} imports ${m[1]} (${target})`);
      }
    }
  }
  assert.deepEqual(violations, []);
});
