/**
 * docs/metrics.md against a live /metrics (issue 18 item 13): a real tracker
 * (with a TVM port) and a real agent (a CPU and a VTA-simulator board), after
 * a session on each board so that the lazily created series exist. Both ways:
 * every family either process exports is documented in its table with the
 * right type and labels, every documented name is exported (or the doc names
 * the condition it needs, which this farm meets), and the counts the doc
 * states — series per board, histogram buckets — are what a scrape has.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { connectTracker, type Session, type TrackerClient } from "../host-sdk/index.ts";
import { refused } from "./helpers/assertions.ts";
import { compileVadd } from "./helpers/kernels.ts";
import { scrape, type Scrape } from "./helpers/metrics.ts";
import { startAgentProcess, startTrackerProcess, waitFor, waitForFreeBoards, type AgentProcess, type TrackerProcess } from "./helpers/processes.ts";
import { after, before, describe, it } from "./helpers/suites.ts";

const DOC_PATH = fileURLToPath(new URL("../docs/metrics.md", import.meta.url));

/** One row of a metrics table in docs/metrics.md. */
interface DocRow {
  /** Names as written: a full family name, or a prefix ending in `*`. */
  names: string[];
  /** The type cell's first word: gauge, counter, histogram, or "various". */
  type: string;
  /** Label names; empty for "—". */
  labels: string[];
  /** The condition the row says the metric needs ("Only with …"), if any. */
  only?: string;
}

/** The rows of the metrics table under `## heading`. */
function docTable(doc: string, heading: string): DocRow[] {
  const start = doc.indexOf(`\n## ${heading}\n`);
  assert.ok(start >= 0, `docs/metrics.md has a "## ${heading}" section`);
  const end = doc.indexOf("\n## ", start + 1);
  const section = doc.slice(start, end < 0 ? undefined : end);
  const rows: DocRow[] = [];
  for (const line of section.split("\n")) {
    if (!line.startsWith("| `")) continue;
    const cells = line
      .split(/(?<!\\)\|/)
      .slice(1, -1)
      .map((c) => c.trim());
    assert.equal(cells.length, 4, `a metric row has 4 cells (metric, type, labels, meaning): ${line}`);
    const [metric, type, labels, meaning] = cells as [string, string, string, string];
    const names = [...metric.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
    // "`direction` = `to_board` \| `from_board`": the label is the name before "=".
    const labelNames =
      labels === "—" ? [] : labels.split(",").map((part) => /`([^`]+)`/.exec(part)?.[1] ?? assert.fail(`a label cell part without a name: ${part}`));
    const only = /\bOnly (with [^.]+?)(?:\.|$)/.exec(meaning)?.[1];
    rows.push({ names, type: type.split(/[ ,]/)[0]!, labels: labelNames, ...(only ? { only } : {}) });
  }
  assert.ok(rows.length > 0, `the "## ${heading}" section has a metrics table`);
  return rows;
}

/** The documented row of `family`, by full name or by a `prefix*` name. */
function rowOf(rows: DocRow[], family: string): DocRow | undefined {
  return rows.find((r) => r.names.some((n) => (n.endsWith("*") ? family.startsWith(n.slice(0, -1)) : n === family)));
}

/** Label names a family's samples carry (a histogram's `le` left out), or undefined with no sample. */
function labelsOf(s: Scrape, family: string, type: string): string[] | undefined {
  const names = type === "histogram" ? [`${family}_bucket`, `${family}_sum`, `${family}_count`] : [family];
  const samples = s.samples.filter((x) => names.includes(x.name));
  if (samples.length === 0) return undefined;
  return [...new Set(samples.flatMap((x) => Object.keys(x.labels)).filter((l) => l !== "le"))].sort();
}

/** Series of a scrape carrying `board="BOARD"`, by family-ish name (histogram samples by their own names). */
function seriesOfBoard(s: Scrape, board: string, except: string[] = []): string[] {
  return s.samples.filter((x) => x.labels.board === board && !except.some((e) => x.name === e)).map((x) => `${x.name}${JSON.stringify(x.labels)}`);
}

/** A number the doc states, found by `re` (its first group; commas allowed). */
function stated(doc: string, re: RegExp, what: string): number {
  const m = re.exec(doc);
  assert.ok(m, `docs/metrics.md states ${what} (${re})`);
  return Number(m[1]!.replace(/,/g, ""));
}

/**
 * Conditions the doc may give a metric ("Only with a TVM port"), and whether
 * this test's farm meets them. A condition the doc states that is not listed
 * here fails the test: add the farm that meets it, or the condition.
 */
const CONDITIONS: Record<string, boolean> = {
  "with a TVM port": true,
};

/** Checks one process's scrape against its table, both ways. */
function checkBothWays(s: Scrape, rows: DocRow[], who: string): void {
  assert.ok(s.families.size > 0, `${who}'s scrape declares families`);
  const undocumented = [...s.families.keys()].filter((f) => !rowOf(rows, f));
  assert.deepEqual(undocumented, [], `${who}: families exported but not in docs/metrics.md`);
  for (const [family, type] of s.families) {
    const row = rowOf(rows, family)!;
    if (row.type === "various") continue; // prom-client's process metrics: their own types and labels
    assert.equal(row.type, type, `${who}: docs/metrics.md's type of ${family}`);
    const labels = labelsOf(s, family, type);
    assert.ok(labels, `${who}: ${family} has a sample after the sessions (its labels can be checked)`);
    assert.deepEqual(labels, [...row.labels].sort(), `${who}: docs/metrics.md's labels of ${family}`);
  }
  for (const row of rows) {
    if (row.only !== undefined)
      assert.ok(row.only in CONDITIONS, `${who}: docs/metrics.md says ${row.names.join(", ")} appear only ${row.only}: a condition this test does not know`);
    if (row.only !== undefined && !CONDITIONS[row.only]) continue;
    for (const name of row.names) {
      const exported = name.endsWith("*") ? [...s.families.keys()].some((f) => f.startsWith(name.slice(0, -1))) : s.families.has(name);
      assert.ok(
        exported,
        `${who}: docs/metrics.md documents ${name}${row.only ? ` (only ${row.only}, which this farm is)` : ""} but the scrape has no such family`,
      );
    }
  }
}

describe("docs/metrics.md matches a live /metrics", () => {
  let tracker: TrackerProcess;
  let agent: AgentProcess;
  let client: TrackerClient;
  let t: Scrape;
  let a: Scrape;
  const doc = readFileSync(DOC_PATH, "utf8");
  const boards = [
    { key: "cpu", kind: "cpu", name: "cpu0" },
    { key: "vta", kind: "vta-sim", name: "vta0" },
  ];

  /** A session on `key` with one good call (CPU) and one refused call, or one listdir (VTA). */
  async function session(key: string): Promise<void> {
    const s: Session = await client.request(key);
    if (key === "cpu") {
      const module = await compileVadd();
      await s.upload(module);
      const vadd = (await s.loadModule(module.name)).getFunction("vadd");
      const n = 16;
      const x = await s.array(new Float32Array(n).fill(1));
      const out = await s.array({ shape: [n], dtype: "float32" });
      await vadd(x, x, out, n);
      await refused(vadd(x, x, out), "BAD_ARGUMENTS");
    } else {
      await s.listdir();
    }
    await s.close();
  }

  before(async () => {
    tracker = await startTrackerProcess(["--metrics-port", "0", "--tvm-port", "0"]);
    agent = await startAgentProcess(
      tracker.address,
      boards.map((b) => `${b.kind}:key=${b.key},name=${b.name}`),
      ["--name", "docs", "--metrics-port", "0"],
    );
    client = await connectTracker(tracker.address);
    await waitForFreeBoards(client, boards.length);
    for (const b of boards) await session(b.key);
    t = await waitFor("both sessions' ends in the tracker's metrics", async () => {
      const m = await scrape(tracker.httpAddress!);
      return m.sum("kernelfarm_sessions_ended_total") === 2 ? m : undefined;
    });
    a = await waitFor("both sessions' ends and the refused call in the agent's metrics", async () => {
      const m = await scrape(agent.metricsAddress!);
      return m.sum("kernelfarm_agent_sessions_total") === 2 && m.sum("kernelfarm_agent_call_errors_total") === 1 ? m : undefined;
    });
  });
  after(async () => {
    client?.close();
    await agent?.stop();
    await tracker?.stop();
  });

  it("every tracker family is documented with its type and labels, and every documented one is exported", () => {
    const rows = docTable(doc, "Tracker metrics");
    assert.ok(
      rows.some((r) => r.only === "with a TVM port"),
      "the TVM port's metrics say they need one",
    );
    checkBothWays(t, rows, "the tracker");
  });

  it("every agent family is documented with its type and labels, and every documented one is exported", () => {
    checkBothWays(a, docTable(doc, "Agent metrics"), "the agent");
  });

  it("the tracker's series per board are what the doc says, for every board", () => {
    const perBoard = stated(doc, /the tracker has \**(\d+)\**\s+per\s+attached\s+board/, "the tracker's series per board");
    for (const b of boards) {
      const series = seriesOfBoard(t, `docs/${b.name}`);
      assert.equal(
        series.length,
        perBoard,
        `docs/metrics.md says ${perBoard} series per board; the tracker has ${series.length} for docs/${b.name}:\n${series.join("\n")}`,
      );
    }
    const thousand = stated(doc, /([\d,]+)\s+series\s+for\s+1,000\s+boards/, "the tracker's series for 1,000 boards");
    assert.equal(thousand, perBoard * 1000);
  });

  it("the agent's series per board are what the doc says, besides one per error code and end reason seen", () => {
    const perBoard = stated(doc, /an agent \**(?:about )?(\d+)\**\s+per\s+board/, "an agent's series per board");
    for (const b of boards) {
      const series = seriesOfBoard(a, b.name, ["kernelfarm_agent_call_errors_total", "kernelfarm_agent_sessions_total"]);
      assert.equal(
        series.length,
        perBoard,
        `docs/metrics.md says ${perBoard} series per board; the agent has ${series.length} for ${b.name}:\n${series.join("\n")}`,
      );
    }
    // The rest: one per code or reason seen on that board (here OK on both, BAD_ARGUMENTS on cpu0).
    assert.equal(seriesOfBoard(a, "cpu0").length - perBoard, 2);
    assert.equal(seriesOfBoard(a, "vta0").length - perBoard, 1);
  });

  it("histogram buckets are what the doc says", () => {
    const m = /(\d+) \(`queue_wait`\) and (\d+) \(`session_duration`\)\s+buckets\s+per\s+key,\s+(\d+)\s+per\s+board\s+on\s+agents/.exec(doc);
    assert.ok(m, "docs/metrics.md states the histograms' buckets");
    const buckets = (s: Scrape, name: string, labels: Record<string, string>) => s.all(`${name}_bucket`, labels).filter((x) => x.labels.le !== "+Inf").length;
    assert.equal(buckets(t, "kernelfarm_queue_wait_seconds", { key: "cpu" }), Number(m[1]));
    assert.equal(buckets(t, "kernelfarm_session_duration_seconds", { key: "cpu" }), Number(m[2]));
    assert.equal(buckets(a, "kernelfarm_agent_worker_start_seconds", { board: "cpu0" }), Number(m[3]));
  });
});
