/**
 * deploy/grafana and deploy/compose.yaml, offline: the kernelfarm dashboard is
 * a Grafana dashboard whose every query names only metrics a real farm
 * exports (a tracker and an agent with a CPU board, scraped after a session
 * with a call and a failed one), and the compose file and the provisioning
 * files it mounts fit together. No Docker engine, Prometheus or Grafana runs
 * here: what they would make of these files is not tested.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { join, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import { parse as parseYaml } from "yaml";
import { connectTracker, type TrackerClient } from "../host-sdk/index.ts";
import { refused } from "./helpers/assertions.ts";
import { compileVadd } from "./helpers/kernels.ts";
import { scrape } from "./helpers/metrics.ts";
import { runCli, startAgentProcess, startTrackerProcess, waitFor, waitForFreeBoards, type AgentProcess, type TrackerProcess } from "./helpers/processes.ts";
import { exportedSeries, metricNames } from "./helpers/promql.ts";

const DEPLOY = fileURLToPath(new URL("../deploy/", import.meta.url));
const DASHBOARD = join(DEPLOY, "grafana/dashboards/kernelfarm.json");
const DATASOURCE_UID = "kfarm-prometheus";

interface Target {
  expr: string;
  refId: string;
  datasource?: { uid: string };
}

interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { x: number; y: number; w: number; h: number };
  datasource?: { type: string; uid: string };
  targets?: Target[];
}

interface Dashboard {
  uid: string;
  title: string;
  schemaVersion: number;
  panels: Panel[];
  templating: { list: Array<{ name: string; datasource?: { uid: string }; query: string | { query: string } }> };
}

describe("the PromQL metric names the dashboard check reads", () => {
  it("takes metrics, not functions, labels, grouping, ranges or variables", () => {
    assert.deepEqual(metricNames('histogram_quantile(0.95, sum by (le, key) (rate(kernelfarm_queue_wait_seconds_bucket{key=~"$key"}[$__rate_interval])))'), [
      "kernelfarm_queue_wait_seconds_bucket",
    ]);
    assert.deepEqual(metricNames("sum(a_total) by (le) / on (board) group_left (key, kind) b_info offset 5m"), ["a_total", "b_info"]);
    assert.deepEqual(metricNames('kernelfarm_board_health{health!="healthy", board=~"a.{2}"} == 1 and bool c'), ["kernelfarm_board_health", "c"]);
    assert.deepEqual(metricNames("label_values(kernelfarm_boards, key)"), ["kernelfarm_boards"]);
    assert.deepEqual(metricNames("sum without (instance) (rate(x[5m:1m])) * 1e3"), ["x"]);
  });
});

describe("deploy/grafana/dashboards/kernelfarm.json against a real farm's metrics", () => {
  let tracker: TrackerProcess;
  let agent: AgentProcess;
  let client: TrackerClient;
  let exported: Set<string>;

  before(async () => {
    tracker = await startTrackerProcess(["--metrics-port", "0"]);
    const [started, module] = await Promise.all([startAgentProcess(tracker.address, ["cpu:key=cpu,name=cpu0"], ["--metrics-port", "0"]), compileVadd()]);
    agent = started;
    client = await connectTracker(tracker.address);
    await waitForFreeBoards(client, 1);
    // One session with a call and a failed one: the histograms and the counters of calls and errors have series.
    const s = await client.request("cpu");
    await s.upload(module);
    const vadd = (await s.loadModule(module.name)).getFunction("vadd");
    const [a, b, c] = await Promise.all([s.array(new Float32Array(16)), s.array(new Float32Array(16)), s.array({ shape: [16], dtype: "float32" })]);
    await vadd(a, b, c, 16);
    await refused(vadd(a, b, c), "BAD_ARGUMENTS");
    await s.close();
    await waitFor("the session's end in both scrapes", async () => {
      const [t, g] = await Promise.all([scrape(tracker.httpAddress!), scrape(agent.metricsAddress!)]);
      return (
        t.sum("kernelfarm_sessions_ended_total") === 1 && g.sum("kernelfarm_agent_sessions_total") === 1 && g.sum("kernelfarm_agent_call_errors_total") === 1
      );
    });
    const texts = await Promise.all([tracker.httpAddress!, agent.metricsAddress!].map(async (a) => (await fetch(`http://${a}/metrics`)).text()));
    exported = new Set(texts.flatMap((t) => [...exportedSeries(t)]));
  });
  after(async () => {
    client?.close();
    await agent?.stop();
    await tracker?.stop();
  });

  it("is a Grafana dashboard: panels with unique ids inside the grid, each on the provisioned data source with queries", () => {
    const d = JSON.parse(readFileSync(DASHBOARD, "utf8")) as Dashboard;
    assert.equal(d.uid, "kernelfarm");
    assert.ok(d.title && Number.isInteger(d.schemaVersion) && Array.isArray(d.panels));
    assert.equal(new Set(d.panels.map((p) => p.id)).size, d.panels.length, "panel ids are unique");
    for (const p of d.panels) {
      assert.ok(p.gridPos.x >= 0 && p.gridPos.w > 0 && p.gridPos.x + p.gridPos.w <= 24, `${p.title}: inside the 24-column grid`);
      if (p.type === "row") continue;
      assert.equal(p.datasource?.uid, DATASOURCE_UID, `${p.title}: the provisioned data source`);
      assert.ok(p.targets && p.targets.length > 0, `${p.title}: has queries`);
      assert.equal(new Set(p.targets.map((t) => t.refId)).size, p.targets.length, `${p.title}: refIds are unique`);
      for (const t of p.targets) assert.ok(typeof t.expr === "string" && t.expr.length > 0, `${p.title}: query ${t.refId} has an expr`);
    }
    const titles = d.panels.map((p) => p.title.toLowerCase()).join("\n");
    for (const what of ["boards by state", "queue depth", "queue wait", "sessions started", "sessions open", "errors", "health"])
      assert.match(titles, new RegExp(what), `a panel for ${what}`);
  });

  it("names in its queries and variables only metrics the farm exports", () => {
    const d = JSON.parse(readFileSync(DASHBOARD, "utf8")) as Dashboard;
    const queries = [
      ...d.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ where: `panel "${p.title}" ${t.refId}`, expr: t.expr }))),
      ...d.templating.list.map((v) => ({ where: `variable ${v.name}`, expr: typeof v.query === "string" ? v.query : v.query.query })),
    ];
    for (const { where, expr } of queries) {
      const names = metricNames(expr);
      assert.ok(names.length > 0, `${where}: no metric in ${expr}`);
      for (const name of names) assert.ok(exported.has(name), `${where}: ${name} is not a metric the tracker or the agent exports (${expr})`);
    }
  });
});

describe("deploy/compose.yaml", () => {
  const compose = () =>
    parseYaml(readFileSync(join(DEPLOY, "compose.yaml"), "utf8")) as { services: Record<string, { image: string; command?: string[]; volumes?: string[] }> };

  it("uses the farm's images, mounts only files that exist, and passes kfarm only flags it knows", async () => {
    const services = compose().services;
    for (const name of ["tracker", "agent-vta", "agent-cpu", "prometheus", "grafana"]) assert.ok(services[name], `a ${name} service`);
    assert.match(services.tracker!.image, /^kernelfarm\/tracker:/);
    for (const name of ["agent-vta", "agent-cpu"]) assert.match(services[name]!.image, /^kernelfarm\/agent-sim:/);
    for (const [name, s] of Object.entries(services)) {
      for (const volume of s.volumes ?? []) {
        const source = volume.split(":")[0]!;
        assert.ok(source.startsWith("."), `${name}: ${volume} is a file of the checkout`);
        assert.ok(existsSync(resolve(DEPLOY, source)), `${name}: mounts ${source}, which does not exist`);
      }
      const [command, ...flags] = s.command ?? [];
      if (command !== "tracker" && command !== "agent") continue;
      const help = await runCli([command, "--help"]);
      for (const flag of flags) {
        const flagName = /^--[a-z-]+/.exec(flag)?.[0];
        assert.ok(flagName && new RegExp(`(^|\\s)${flagName}[\\s,=<]`, "m").test(help.stdout), `${name}: \`kfarm ${command}\` has no flag ${flag}`);
      }
    }
  });

  it("has Prometheus scrape the tracker and both agents where they serve /metrics, and Grafana read that Prometheus", () => {
    const services = compose().services;
    const metricsPort = (name: string) => /^--metrics-port=(\d+)$/.exec(services[name]!.command!.find((a) => a.startsWith("--metrics-port="))!)![1];
    const prometheus = parseYaml(readFileSync(join(DEPLOY, "prometheus/compose.yml"), "utf8")) as {
      scrape_configs: Array<{ static_configs: Array<{ targets: string[] }> }>;
    };
    const targets = prometheus.scrape_configs.flatMap((j) => j.static_configs.flatMap((c) => c.targets)).sort();
    assert.deepEqual(
      targets,
      ["agent-cpu", "agent-vta", "tracker"].map((n) => `${n}:${metricsPort(n)}`),
    );
    const datasources = parseYaml(readFileSync(join(DEPLOY, "grafana/provisioning/datasources/kernelfarm.yaml"), "utf8")) as {
      datasources: Array<{ uid: string; url: string }>;
    };
    assert.deepEqual(
      datasources.datasources.map((s) => [s.uid, s.url]),
      [[DATASOURCE_UID, "http://prometheus:9090"]],
    );
    const providers = parseYaml(readFileSync(join(DEPLOY, "grafana/provisioning/dashboards/kernelfarm.yaml"), "utf8")) as {
      providers: Array<{ options: { path: string } }>;
    };
    assert.ok(
      services.grafana!.volumes!.some((v) => v === `./grafana/dashboards:${providers.providers[0]!.options.path}:ro`),
      "Grafana mounts the dashboards where the provider reads them",
    );
  });
});
