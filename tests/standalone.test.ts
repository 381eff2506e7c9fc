/**
 * The repository stands on its own: no tracked file sends a reader or a test
 * to files outside it (a sibling folder of design notes, specs or reference
 * material that only the developers' machines had), the facts the code relies
 * on are in its own docs, and the golden VTA instruction streams the compiler
 * is checked against are fixtures of the repository. The docs describe the
 * product, not the machines it was developed on. BENCHMARKS.md may say which
 * machine measured which figure.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { describe, it } from "node:test";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const GOLDEN = join(ROOT, "tests/fixtures/vta-golden");

/** Tracked files (and untracked ones git does not ignore), as text; binary files left out. */
function repositoryTexts(): Array<{ path: string; text: string }> {
  const listed = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: ROOT, maxBuffer: 64 << 20 })
    .toString()
    .split("\0")
    .filter(Boolean);
  const out: Array<{ path: string; text: string }> = [];
  for (const path of listed) {
    const full = join(ROOT, path);
    if (!existsSync(full)) continue; // deleted in the working tree
    const bytes = readFileSync(full);
    if (bytes.includes(0)) continue;
    out.push({ path, text: bytes.toString("utf8") });
  }
  return out;
}

// Written in pieces, so that this file does not name them itself.
const SIBLING = "shared";
const OUTSIDE: Array<[RegExp, string]> = [
  [new RegExp(`\\.\\./${SIBLING}\\b`), "a folder beside the repository"],
  [new RegExp(`(^|[^-\\w])${SIBLING}/(vta|reference|hooks|seeds)\\b`), "the sibling folder"],
  [new RegExp(`\\b${"SPEC"}\\.md\\b`), "the sibling folder's VTA spec"],
  [new RegExp(`\\b${"DESIGN"}\\.md\\b`), "the sibling folder's design notes"],
  [new RegExp(`\\b${"STYLE"}\\.md\\b`), "the sibling folder's style notes"],
  [new RegExp(`\\btvm-rpc(-baseline)?\\.md\\b`), "the sibling folder's TVM RPC reference"],
  [new RegExp(`team's ${SIBLING} folder|beside the ${"clone"}`), "a folder beside the repository"],
  [new RegExp(`\\bthe VTA ${"spec"}\\b|\\b${"SPEC"} §`), "the sibling folder's VTA spec"],
];

/**
 * The one place a path beside the repository may appear: the line of .ci/run that points KFARM_TVM_HOME at the TVM
 * build the CI machine keeps there (tests/helpers/tvm.ts). The tests themselves only read the variable.
 */
const CI_TVM_HOME = (path: string, line: string) => path === ".ci/run" && /^if \[ -z "\$\{KFARM_TVM_HOME:-\}" \] .* export KFARM_TVM_HOME=/.test(line);

/** Phrases about the machines kernelfarm was developed on, not about kernelfarm. */
const DEVELOPMENT_MACHINES = [/GPU machine (accepts|takes)/i, /copied payload/i, /\bdevice time\b/i, /64 MiB carry/i];

describe("the repository stands on its own", () => {
  it("no file outside BENCHMARKS.md points at files outside the repository", () => {
    const found: string[] = [];
    for (const { path, text } of repositoryTexts()) {
      if (path === "BENCHMARKS.md") continue;
      text.split("\n").forEach((line, i) => {
        if (CI_TVM_HOME(path, line)) return;
        for (const [pattern, what] of OUTSIDE) if (pattern.test(line)) found.push(`${path}:${i + 1} names ${what}: ${line.trim().slice(0, 160)}`);
      });
    }
    assert.deepEqual(found, [], "write the facts into the repository's own docs or fixtures instead");
  });

  it("the docs and READMEs describe the product, not the machines it was developed on", () => {
    const found: string[] = [];
    for (const { path, text } of repositoryTexts()) {
      if (!path.endsWith(".md") || path === "BENCHMARKS.md") continue;
      text.split("\n").forEach((line, i) => {
        for (const pattern of DEVELOPMENT_MACHINES) if (pattern.test(line)) found.push(`${path}:${i + 1}: ${line.trim().slice(0, 160)}`);
      });
    }
    assert.deepEqual(found, []);
  });

  it("the golden VTA instruction streams are fixtures of the repository, whole", () => {
    assert.ok(existsSync(join(GOLDEN, "README.md")), "tests/fixtures/vta-golden/README.md says what the streams are");
    for (const [name, count] of [
      ["matrix_multiply", 56],
      ["matrix_multiply_opt", 142],
      ["convolution_opt", 3366],
    ] as const) {
      const file = join(GOLDEN, `${name}.stream.txt`);
      assert.ok(existsSync(file), `tests/fixtures/vta-golden/${name}.stream.txt is missing`);
      const instructions = readFileSync(file, "utf8")
        .split("\n")
        .filter((l) => /^\s*\d+\s+[A-Z_]+/.test(l));
      assert.equal(instructions.length, count, `${name}: TVM emitted ${count} instructions`);
      assert.match(instructions.at(-1)!, /\bFINISH\b/, `${name} ends with FINISH`);
    }
  });
});
