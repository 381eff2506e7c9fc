/**
 * deploy/two-hosts.sh, the newcomer's farm of two hosts on one machine
 * (deploy/README.md): it comes up, this host reaches the tracker across the
 * bridge and runs a session on the other host's board, Prometheus scrapes
 * both hosts, and every query of the Grafana dashboard
 * (deploy/grafana/dashboards/kernelfarm.json) runs against that Prometheus
 * without an error, the board panels with data. `down` leaves nothing behind.
 *
 * Skips, saying why, without root or ip; the Prometheus half without prometheus.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "./helpers/suites.ts";
import { connectTracker, type TrackerClient } from "../host-sdk/index.ts";
import { checkVadd } from "./helpers/kernels.ts";
import { waitFor } from "./helpers/processes.ts";

const SCRIPT = new URL("../deploy/two-hosts.sh", import.meta.url).pathname;
const DASHBOARD = new URL("../deploy/grafana/dashboards/kernelfarm.json", import.meta.url).pathname;
const PROMETHEUS = "http://10.77.0.1:9090";

function whyNot(): string | false {
  if (process.getuid?.() !== 0) return "needs root (network namespaces and a bridge)";
  if (spawnSync("ip", ["-V"]).status !== 0) return "the ip tool (iproute2) is not installed";
  if (spawnSync("ip", ["netns", "list"], { encoding: "utf8" }).stdout.includes("kfarm-head"))
    return "a two-hosts farm is already up on this machine (deploy/two-hosts.sh down)";
  return false;
}
const skip = whyNot();
const noPrometheus = spawnSync("prometheus", ["--version"]).status === 0 ? false : "the prometheus binary is not installed (apt-get install prometheus)";

interface Panel {
  title: string;
  targets?: Array<{ expr: string }>;
  panels?: Panel[];
}

function dashboardQueries(): Array<{ panel: string; expr: string }> {
  const out: Array<{ panel: string; expr: string }> = [];
  const walk = (panels: Panel[]) => {
    for (const p of panels) {
      for (const t of p.targets ?? []) out.push({ panel: p.title, expr: t.expr });
      walk(p.panels ?? []);
    }
  };
  walk((JSON.parse(readFileSync(DASHBOARD, "utf8")) as { panels: Panel[] }).panels);
  return out;
}

/** Grafana's variables, as the dashboard's defaults would fill them. */
function asGrafanaWould(expr: string): string {
  return expr.replace(/\$__rate_interval|\$__interval|\$interval/g, "1m").replace(/\$\{?\w+\}?/g, ".*");
}

describe("deploy/two-hosts.sh: a farm of two hosts on one machine", { skip, timeout: 300_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), "kfarm-two-hosts-"));
  const env = { ...process.env, KFARM_TWO_HOSTS_DIR: dir, NODE: process.execPath };
  let client: TrackerClient;

  before(() => {
    const up = spawnSync("bash", [SCRIPT, "up"], { env, encoding: "utf8", timeout: 120_000 });
    assert.equal(up.status, 0, `two-hosts.sh up failed:\n${up.stdout}\n${up.stderr}`);
  });

  after(() => {
    client?.close();
    const down = spawnSync("bash", [SCRIPT, "down"], { env, encoding: "utf8", timeout: 60_000 });
    rmSync(dir, { recursive: true, force: true });
    assert.equal(down.status, 0, down.stderr);
    assert.ok(!spawnSync("ip", ["netns", "list"], { encoding: "utf8" }).stdout.includes("kfarm-"), "down removes both namespaces");
    assert.notEqual(spawnSync("ip", ["link", "show", "kfarm-br0"]).status, 0, "down removes the bridge");
  });

  it("this host reaches the tracker on the head host and runs a session on the board host", async () => {
    client = await connectTracker("10.77.0.1:9190");
    await waitFor(
      "board1's two boards",
      async () => (await client.summary()).boards.filter((b) => b.agent_name === "board1" && b.state === "free").length === 2,
      30_000,
    );
    const s = await client.request("cpu");
    try {
      assert.equal(s.board.agent_name, "board1", "the board on the other host");
      await checkVadd(s);
    } finally {
      await s.close();
    }
  });

  it("Prometheus on the head host scrapes both hosts, and every dashboard query runs against it", { skip: noPrometheus }, async () => {
    const query = async (expr: string) => {
      const r = await fetch(`${PROMETHEUS}/api/v1/query?query=${encodeURIComponent(expr)}`);
      return (await r.json()) as { status: string; error?: string; data: { result: unknown[] } };
    };
    await waitFor(
      "both targets up",
      async () => {
        const r = await query('up{job=~"kfarm-tracker|kfarm-agent"} == 1');
        return r.data.result.length === 2;
      },
      60_000,
      250,
    );
    await waitFor("the tracker's boards in Prometheus", async () => (await query("sum(kernelfarm_boards)")).data.result.length > 0, 60_000, 250);
    const queries = dashboardQueries();
    assert.ok(queries.length >= 10, `the dashboard has ${queries.length} queries`);
    for (const { panel, expr } of queries) {
      const r = await query(asGrafanaWould(expr));
      assert.equal(r.status, "success", `panel "${panel}": ${expr} → ${r.error}`);
    }
    const boardPanels = queries.filter((q) => /kernelfarm_boards\b/.test(q.expr));
    assert.ok(boardPanels.length > 0, "the dashboard shows boards");
    for (const { panel, expr } of boardPanels) assert.ok((await query(asGrafanaWould(expr))).data.result.length > 0, `panel "${panel}" has data: ${expr}`);
  });
});
