/**
 * Dependencies point one way (docs/architecture.md, "Parts"): protos, the
 * contract, imports no part and no runtime (no sockets, TLS, HTTP, files,
 * processes or logging); domain (the rules both sides apply to kernels) and
 * runtime (transport, credentials, logging, probes) import protos; vta (the
 * toolchain both sides share) imports protos and domain; the tracker imports
 * protos, domain and runtime; device-agent and host-sdk also vta. Only the composition layer (root files,
 * cli/) puts parts together, and no part imports the package by its own
 * name, which would reach the composition layer through the back door.
 * Inside the parts, files import each other without cycles — type-only
 * imports included: a cycle means two modules are one, or a third is missing.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const PACKAGE = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { name: string }).name;
const ALLOWED: Record<string, string[]> = {
  protos: [],
  domain: ["protos"],
  runtime: ["protos"],
  vta: ["protos", "domain"],
  tracker: ["protos", "domain", "runtime"],
  "device-agent": ["protos", "domain", "runtime", "vta"],
  "host-sdk": ["protos", "domain", "runtime", "vta"],
};
/** What a process does with the world, which the contract never does: the runtime's modules. */
const RUNTIME_MODULES = [
  "node:net",
  "node:tls",
  "node:http",
  "node:https",
  "node:http2",
  "node:dgram",
  "node:child_process",
  "node:worker_threads",
  "node:fs",
  "node:fs/promises",
  "pino",
  "koffi",
];
/** Parts that may not reach the runtime's modules themselves, and the ones each may still use. */
const NO_RUNTIME: Record<string, string[]> = { protos: [], domain: ["node:fs/promises"] };

function* sources(dir: string): Iterable<string> {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (name === "node_modules" || name === "gen") continue;
    if (statSync(path).isDirectory()) yield* sources(path);
    else if (path.endsWith(".ts") && !path.endsWith(".spec.ts")) yield path;
  }
}

/** Every module a file names: static imports and re-exports (type-only too) and dynamic imports. */
function importsOf(text: string): string[] {
  const names = [...text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^;'"]*?\bfrom\s*["']([^"']+)["']/g)].map((m) => m[1]!);
  names.push(...[...text.matchAll(/(?:^|\n)\s*import\s*["']([^"']+)["']/g)].map((m) => m[1]!));
  names.push(...[...text.matchAll(/\bimport\(\s*["']([^"']+)["']\s*\)/g)].map((m) => m[1]!));
  return names;
}

/** Relative imports of every file of the parts, resolved to paths under ROOT. */
function importGraph(): Map<string, { spec: string; target: string }[]> {
  const graph = new Map<string, { spec: string; target: string }[]>();
  for (const part of Object.keys(ALLOWED)) {
    for (const file of sources(join(ROOT, part))) {
      const edges = importsOf(readFileSync(file, "utf8")).map((spec) => ({
        spec,
        target: spec.startsWith(".") ? relative(ROOT, resolve(dirname(file), spec)) : spec,
      }));
      graph.set(relative(ROOT, file), edges);
    }
  }
  return graph;
}

/** Strongly connected components of more than one file (Tarjan), each as a path around it. */
function cycles(graph: Map<string, { target: string }[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const { target: w } of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe("the architecture", () => {
  const graph = importGraph();

  it("each part imports only the parts below it", () => {
    const violations: string[] = [];
    for (const [file, edges] of graph) {
      const part = file.split("/")[0]!;
      for (const { spec, target } of edges) {
        if (!spec.startsWith(".")) continue;
        const to = target.split("/")[0]!;
        if (to !== part && !ALLOWED[part]!.includes(to)) violations.push(`${file} imports ${spec} (${to})`);
      }
    }
    assert.deepEqual(violations, []);
  });

  it("the contract imports no runtime, and domain rules none but reading a file", () => {
    const violations: string[] = [];
    for (const [file, edges] of graph) {
      const part = file.split("/")[0]!;
      const allowed = NO_RUNTIME[part];
      // A generator (protos/generate-contract.ts) is a build tool npm runs; no process of the farm loads it.
      if (!allowed || /\/generate-[^/]*\.ts$/.test(file)) continue;
      for (const { spec } of edges) if (RUNTIME_MODULES.includes(spec) && !allowed.includes(spec)) violations.push(`${file} imports ${spec}`);
    }
    assert.deepEqual(violations, []);
  });

  it("device-agent shows which process runs what: agent/ and worker/ never import each other; common/ and backends/ import neither", () => {
    // The agent process and its session workers (each its own process, maybe its own uid) share code only through common/ and backends/.
    const FORBIDDEN: Record<string, string[]> = {
      "device-agent/agent": ["device-agent/worker"],
      "device-agent/worker": ["device-agent/agent"],
      "device-agent/common": ["device-agent/agent", "device-agent/worker"],
      "device-agent/backends": ["device-agent/agent", "device-agent/worker"],
    };
    const room = (path: string) => path.split("/").slice(0, 2).join("/");
    const violations: string[] = [];
    for (const [file, edges] of graph) {
      const forbidden = FORBIDDEN[room(file)];
      if (!forbidden) continue;
      for (const { spec, target } of edges) if (spec.startsWith(".") && forbidden.includes(room(target))) violations.push(`${file} imports ${spec}`);
    }
    assert.deepEqual(violations, []);
  });

  it(`no part imports the package by its own name ("${PACKAGE}")`, () => {
    const violations = [...graph].flatMap(([file, edges]) =>
      edges.filter(({ spec }) => spec === PACKAGE || spec.startsWith(`${PACKAGE}/`)).map(({ spec }) => `${file} imports ${spec}`),
    );
    assert.deepEqual(violations, []);
  });

  it("no import cycles between files, type-only imports included", () => {
    assert.deepEqual(
      cycles(graph).map((c) => c.join(" ↔ ")),
      [],
    );
  });

  it("finds what it looks for: imports of every form, and a cycle of three", () => {
    const text = `import a from "./a.ts";\nimport type { B } from "./b.ts";\nexport { c } from "./c.ts";\nexport type { D } from "./d.ts";\nimport "./e.ts";\nconst f = await import("./f.ts");\nimport {\n  g,\n  type G,\n} from "${PACKAGE}";\n// a comment that says: import x from "./nope.ts" is not parsed inside a line`;
    assert.deepEqual(importsOf(text).sort(), ["./a.ts", "./b.ts", "./c.ts", "./d.ts", "./e.ts", "./f.ts", PACKAGE].sort());
    const ring = new Map([
      ["x", [{ target: "y" }]],
      ["y", [{ target: "z" }]],
      ["z", [{ target: "x" }]],
      ["w", [{ target: "x" }]],
    ]);
    assert.deepEqual(cycles(ring), [["x", "y", "z"]]);
  });
});
