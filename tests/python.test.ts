/**
 * The Python SDK's pytest suite (python/tests: real tracker and agent
 * processes driven from Python) inside `npm test`: pytest runs once with a
 * JUnit XML report, and each of its cases becomes a subtest here — a pass, a
 * failure with pytest's text, or a skip with pytest's reason — so the
 * summary counts them. Debian's /usr/bin/python3 runs it (python3-grpcio,
 * python3-protobuf, python3-numpy, python3-pytest); without those the suite
 * is skipped, saying which are missing.
 */
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { PYTHON_SUITE_PACKAGES } from "./helpers/python-suite.ts";

const PYTHON = "/usr/bin/python3";
const REPO = fileURLToPath(new URL("..", import.meta.url));
/** The whole suite on a 2-CPU machine takes about a minute; this bounds a hung one. */
const SUITE_TIMEOUT_MS = 15 * 60_000;

/** Why the suite cannot run here, or undefined. */
function missingPython(): string | undefined {
  const modules = PYTHON_SUITE_PACKAGES;
  const probe = spawnSync(
    PYTHON,
    [
      "-c",
      `
import importlib, sys
missing = []
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except Exception:
        missing.append(name)
print("missing:", *missing)
`,
      ...Object.keys(modules),
    ],
    { encoding: "utf8" },
  );
  if (probe.error) return `${PYTHON} is not installed (apt-get install python3 ${Object.values(modules).join(" ")})`;
  const answer = /^missing:(.*)$/m.exec(probe.stdout);
  if (probe.status !== 0 || !answer) return `${PYTHON} could not say which modules it has (exit ${probe.status}): ${probe.stderr.trim()}`;
  const missing = answer[1]!.trim().split(/\s+/).filter(Boolean) as (keyof typeof modules)[];
  if (missing.length === 0) return undefined;
  return `${PYTHON} lacks ${missing.join(", ")} (apt-get install ${missing.map((m) => modules[m]).join(" ")})`;
}

interface PytestCase {
  name: string;
  failure?: string;
  skipped?: string;
}

function unescapeXml(s: string): string {
  return s.replace(/&(lt|gt|quot|apos|amp|#x[0-9a-fA-F]+|#\d+);/g, (_, e: string) =>
    e === "lt"
      ? "<"
      : e === "gt"
        ? ">"
        : e === "quot"
          ? '"'
          : e === "apos"
            ? "'"
            : e === "amp"
              ? "&"
              : String.fromCodePoint(e[1] === "x" ? parseInt(e.slice(2), 16) : Number(e.slice(1))),
  );
}

function attributes(s: string): Record<string, string> {
  return Object.fromEntries([...s.matchAll(/([\w-]+)="([^"]*)"/g)].map((m) => [m[1]!, unescapeXml(m[2]!)]));
}

/** The test cases of pytest's JUnit XML report (its `<testcase>` elements). */
function parseJunit(xml: string): PytestCase[] {
  return [...xml.matchAll(/<testcase\b([^>]*?)(?:\/>|>([\s\S]*?)<\/testcase>)/g)].map((m) => {
    const a = attributes(m[1]!);
    const body = m[2] ?? "";
    // classname "python.tests.test_routes", name "test_x[grpc]" → "test_routes.py::test_x[grpc]", as pytest names it.
    const name = `${(a.classname ?? "").split(".").pop()}.py::${a.name}`;
    const failed = /<(failure|error)\b([^>]*?)(?:\/>|>([\s\S]*?)<\/\1>)/.exec(body);
    if (failed) return { name, failure: unescapeXml(failed[3] ?? "") || attributes(failed[2]!).message || "failed" };
    const skipped = /<skipped\b([^>]*?)(?:\/>|>([\s\S]*?)<\/skipped>)/.exec(body);
    if (skipped) return { name, skipped: attributes(skipped[1]!).message || unescapeXml(skipped[2] ?? "") || "skipped by pytest" };
    return { name };
  });
}

const skip = missingPython();

test("the Python SDK's pytest suite (python/tests)", { skip: skip ?? false, timeout: SUITE_TIMEOUT_MS + 60_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "kf-pytest-"));
  try {
    const report = join(dir, "junit.xml");
    const child = spawn(PYTHON, ["-m", "pytest", "python/tests", `--junitxml=${report}`, "-q", "-p", "no:cacheprovider"], {
      cwd: REPO,
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (c: Buffer) => (output += c.toString()));
    child.stderr.on("data", (c: Buffer) => (output += c.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), SUITE_TIMEOUT_MS);
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    clearTimeout(timer);
    let cases: PytestCase[] = [];
    try {
      cases = parseJunit(readFileSync(report, "utf8"));
    } catch {
      // no report: pytest did not get that far; the assertion below shows its output
    }
    assert.ok(cases.length > 0, `pytest reported no test case (exit ${code}):\n${output}`);
    for (const c of cases) {
      await t.test(c.name, { skip: c.skipped ?? false }, () => {
        if (c.failure !== undefined) assert.fail(c.failure);
      });
    }
    // 0: all passed; 1: some failed (each failure is its subtest's). Anything else is pytest's own trouble.
    assert.ok(code === 0 || code === 1, `pytest exited with ${code}:\n${output.slice(-4000)}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
