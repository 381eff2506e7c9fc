/**
 * A real Prometheus (Debian's `prometheus` package) scrapes a running farm
 * with deploy/prometheus/prometheus.yml — the production config with this
 * test's ports and a 1 s interval — and its query API returns our metrics.
 * Skipped, with the reason printed, where the binary is not installed.
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { accessSync, constants, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { after, before, describe, it } from "./helpers/suites.ts";
import { fileURLToPath } from "node:url";
import { parse, stringify } from "yaml";
import { freePort, startFarm, waitFor } from "./helpers/processes.ts";

const CONFIG = fileURLToPath(new URL("../deploy/prometheus/prometheus.yml", import.meta.url));
const QUERY_TIMEOUT_MS = 30_000;

function findBinary(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    try {
      accessSync(join(dir, name), constants.X_OK);
      return join(dir, name);
    } catch {
      // not here
    }
  }
  return undefined;
}

const PROMETHEUS = findBinary("prometheus");
const skip = PROMETHEUS ? false : "the prometheus binary is not installed (apt-get install prometheus)";

interface ScrapeConfig {
  global: Record<string, string>;
  scrape_configs: { job_name: string; static_configs: { targets: string[] }[] }[];
}

/** The production config with our targets and a 1 s scrape interval. */
function testConfig(text: string, targets: Record<string, string[]>): string {
  const doc = parse(text) as ScrapeConfig;
  doc.global.scrape_interval = "1s";
  doc.global.scrape_timeout = "1s";
  doc.global.evaluation_interval = "1s";
  for (const job of doc.scrape_configs) {
    const ours = targets[job.job_name];
    assert.ok(ours, `deploy/prometheus/prometheus.yml has a job ${job.job_name} the test does not know`);
    job.static_configs = [{ targets: ours }];
  }
  assert.deepEqual(doc.scrape_configs.map((j) => j.job_name).sort(), Object.keys(targets).sort(), "every job of the test is in the config");
  return stringify(doc);
}

interface QueryResult {
  status: string;
  data: { resultType: string; result: { metric: Record<string, string>; value: [number, string] }[] };
}

describe("Prometheus scrapes the farm", { skip }, () => {
  let farm: Awaited<ReturnType<typeof startFarm>>;
  let prom: ChildProcess | undefined;
  let promOutput = "";
  let dir: string;
  let api: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "kf-prom-"));
    farm = await startFarm(["cpu:key=cpu"], { trackerArgs: ["--metrics-port", "0"], agentArgs: ["--metrics-port", "0"] });
    assert.ok(farm.tracker.httpAddress && farm.agent.metricsAddress);
    const config = join(dir, "prometheus.yml");
    writeFileSync(
      config,
      testConfig(readFileSync(CONFIG, "utf8"), { "kfarm-tracker": [farm.tracker.httpAddress], "kfarm-agent": [farm.agent.metricsAddress] }),
    );
    const port = await freePort();
    api = `http://127.0.0.1:${port}`;
    prom = spawn(PROMETHEUS!, [`--config.file=${config}`, `--storage.tsdb.path=${join(dir, "data")}`, `--web.listen-address=127.0.0.1:${port}`], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    const collect = (c: Buffer) => {
      promOutput = (promOutput + c.toString()).slice(-8000);
    };
    prom.stdout!.on("data", collect);
    prom.stderr!.on("data", collect);
    const exited = once(prom, "exit").then(([code]) => {
      throw new Error(`prometheus exited (code ${code}) before it was ready:\n${promOutput}`);
    });
    exited.catch(() => {});
    await Promise.race([exited, waitFor("prometheus /-/ready", async () => (await fetch(`${api}/-/ready`)).status === 200, QUERY_TIMEOUT_MS, 100)]);
  });

  after(async () => {
    if (prom && prom.exitCode === null && prom.signalCode === null) {
      const exited = once(prom, "exit");
      prom.kill("SIGTERM");
      const force = setTimeout(() => prom?.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(force);
    }
    await farm?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Polls an instant query until `accept` likes its result. */
  async function query(expr: string, accept: (r: QueryResult["data"]["result"]) => boolean): Promise<QueryResult["data"]["result"]> {
    try {
      return await waitFor(
        `Prometheus to return ${expr}`,
        async () => {
          const res = await fetch(`${api}/api/v1/query?query=${encodeURIComponent(expr)}`);
          const body = (await res.json()) as QueryResult;
          return body.status === "success" && accept(body.data.result) ? body.data.result : undefined;
        },
        QUERY_TIMEOUT_MS,
        250,
      );
    } catch (err) {
      const targets = await fetch(`${api}/api/v1/targets`)
        .then((r) => r.text())
        .catch((e: Error) => e.message);
      throw new Error(`${(err as Error).message}\ntargets: ${targets}\nprometheus said:\n${promOutput}`, { cause: err });
    }
  }

  it("scrapes the tracker: kernelfarm_boards has the free CPU board", async () => {
    const result = await query("kernelfarm_boards", (r) => r.length > 0);
    const free = result.find((s) => s.metric.state === "free" && s.metric.key === "cpu");
    assert.ok(free, `a free cpu series among ${JSON.stringify(result.map((s) => s.metric))}`);
    assert.equal(free.metric.job, "kfarm-tracker");
    assert.equal(free.value[1], "1");
  });

  it("scrapes the agent: its tracker link and workers", async () => {
    const [connected] = await query("kernelfarm_agent_tracker_connected", (r) => r.length > 0);
    assert.equal(connected!.metric.job, "kfarm-agent");
    assert.equal(connected!.value[1], "1");
    const idle = await query('kernelfarm_agent_workers{state="idle"}', (r) => r.length > 0);
    assert.equal(idle[0]!.value[1], "1");
    const up = await query("up", (r) => r.length === 2 && r.every((s) => s.value[1] === "1"));
    assert.deepEqual(up.map((s) => s.metric.job).sort(), ["kfarm-agent", "kfarm-tracker"]);
  });
});
