/**
 * deploy/, offline: the systemd units, the Prometheus configs, the compose
 * file, the Kubernetes base, the images and deploy/README.md's install steps
 * fit together. The units pass `kfarm` only flags it takes (read from the
 * real CLI's --help); every port Prometheus scrapes is one the units give the
 * processes, on an interface other hosts reach; every deployment gives the
 * tracker and the agents the same ports; and the install steps make what the
 * units expect (the user, the install, the config and secret files, the unit
 * files), start the units and check the ports they pass. No systemd manager
 * runs here: deploy/systemd/verify.sh checks the units with
 * `systemd-analyze verify`.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { basename, dirname, join } from "node:path";
import { before, describe, it } from "node:test";
import { parse as parseYaml } from "yaml";
import { readYamlDocuments } from "./helpers/kustomize.ts";
import { runCli } from "./helpers/processes.ts";

const DEPLOY = fileURLToPath(new URL("../deploy/", import.meta.url));
const SYSTEMD = join(DEPLOY, "systemd");

/** A unit file: each `Key=` of each section, in order (continuation lines joined, comments dropped). */
type Unit = Map<string, Array<[string, string]>>;

function readUnit(path: string): Unit {
  const unit: Unit = new Map();
  let section: Array<[string, string]> | undefined;
  const text = readFileSync(path, "utf8").replace(/\\\n/g, " ");
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line || line.startsWith("#") || line.startsWith(";")) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) {
      section = [];
      unit.set(header[1]!, section);
      continue;
    }
    const eq = line.indexOf("=");
    assert.ok(section && eq > 0, `${basename(path)}: cannot read the line ${line}`);
    section.push([line.slice(0, eq), line.slice(eq + 1).trim()]);
  }
  return unit;
}

/** The last value of `key` in `[Service]` (systemd: a later assignment wins). */
function serviceValue(unit: Unit, key: string): string | undefined {
  return (unit.get("Service") ?? []).filter(([k]) => k === key).at(-1)?.[1];
}

interface UnitCommand {
  file: string;
  /** `tracker` or `agent`. */
  command: string;
  /** ExecStart's words before the command: the executable and the script. */
  program: string[];
  flags: string[];
  unit: Unit;
}

function unitCommand(file: string): UnitCommand {
  const unit = readUnit(join(SYSTEMD, file));
  const words = (serviceValue(unit, "ExecStart") ?? "").split(/\s+/).filter(Boolean);
  const at = words.findIndex((w) => w === "tracker" || w === "agent");
  assert.ok(at > 0, `${file}: ExecStart= runs neither \`kfarm tracker\` nor \`kfarm agent\``);
  return { file, command: words[at]!, program: words.slice(0, at), flags: words.slice(at + 1), unit };
}

const TRACKER_UNIT = "kfarm-tracker.service";
const AGENT_UNIT = "kfarm-agent.service";

/** The value of `--name` in an argument list (`--name=V` or `--name V`). */
function flagValue(args: readonly string[], name: string): string | undefined {
  for (let i = 0; i < args.length; i++) {
    if (args[i] === name) return args[i + 1];
    if (args[i]!.startsWith(`${name}=`)) return args[i]!.slice(name.length + 1);
  }
  return undefined;
}

const portOf = (hostPort: string) => Number(/:(\d+)(?:\/|$)/.exec(hostPort)?.[1]);

/** Each flag of a `kfarm` command's --help, and whether it takes a value. */
function helpFlags(help: string): Map<string, boolean> {
  const flags = new Map<string, boolean>();
  for (const m of help.matchAll(/^ {2}(?:-\w, )?(--[a-z][a-z-]*)( <[^>]+>)?/gm)) flags.set(m[1]!, Boolean(m[2]));
  return flags;
}

/** The shell lines of the ```sh blocks of one `## ` section of deploy/README.md: comments dropped, continuations joined. */
function readmeShellLines(heading: string): string[] {
  const readme = readFileSync(join(DEPLOY, "README.md"), "utf8");
  const start = readme.indexOf(`\n## ${heading}\n`);
  assert.ok(start >= 0, `deploy/README.md has no section "## ${heading}"`);
  const rest = readme.slice(start + 1);
  const end = rest.indexOf("\n## ", 1);
  const section = end < 0 ? rest : rest.slice(0, end);
  const lines: string[] = [];
  for (const [, block] of section.matchAll(/```sh\n([\s\S]*?)```/g)) {
    for (const line of block!.replace(/\\\n\s*/g, " ").split("\n")) {
      const code = line.replace(/(^|\s)#(\s.*)?$/, "").trim();
      if (code) lines.push(code);
    }
  }
  return lines;
}

/** Whether `line` names `path` as a whole (not as the start of a longer path). */
const names = (line: string, path: string) => new RegExp(`(^|[\\s=:'"])${path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(?=$|[\\s'":/])`).test(line);

describe("deploy/: the systemd units, Prometheus and the other deploy files fit together", () => {
  const help = new Map<string, Map<string, boolean>>();
  let tracker: UnitCommand;
  let agent: UnitCommand;

  before(async () => {
    for (const command of ["tracker", "agent"]) {
      const run = await runCli([command, "--help"]);
      assert.equal(run.code, 0, run.stderr);
      help.set(command, helpFlags(run.stdout));
      assert.ok(help.get(command)!.has("--metrics-port"), `read the flags of \`kfarm ${command} --help\`:\n${run.stdout}`);
    }
    const units = readdirSync(SYSTEMD)
      .filter((f) => f.endsWith(".service"))
      .sort();
    assert.deepEqual(units, [AGENT_UNIT, TRACKER_UNIT]);
    tracker = unitCommand(TRACKER_UNIT);
    agent = unitCommand(AGENT_UNIT);
    assert.equal(tracker.command, "tracker");
    assert.equal(agent.command, "agent");
  });

  it("the units pass `kfarm` only flags it takes, each with its value", () => {
    for (const u of [tracker, agent]) {
      const known = help.get(u.command)!;
      for (let i = 0; i < u.flags.length; i++) {
        const word = u.flags[i]!;
        const name = /^--[a-z][a-z-]*/.exec(word)?.[0];
        assert.ok(name && known.has(name), `${u.file}: \`kfarm ${u.command}\` has no flag ${word}`);
        if (known.get(name) && !word.includes("=")) {
          const value = u.flags[++i];
          assert.ok(value !== undefined && !value.startsWith("--"), `${u.file}: ${name} takes a value and has none`);
        }
      }
    }
  });

  it("Prometheus scrapes the tracker and the agents at the metrics ports the units give them, on an interface other hosts reach", () => {
    const prometheus = parseYaml(readFileSync(join(DEPLOY, "prometheus/prometheus.yml"), "utf8")) as {
      scrape_configs: Array<{ job_name: string; static_configs: Array<{ targets: string[] }> }>;
    };
    const targets = (job: string) => {
      const found = prometheus.scrape_configs.find((j) => j.job_name === job);
      assert.ok(found, `deploy/prometheus/prometheus.yml has no job ${job}`);
      return found.static_configs.flatMap((c) => c.targets);
    };
    const trackerPort = flagValue(tracker.flags, "--metrics-port");
    assert.ok(trackerPort, `${TRACKER_UNIT} passes no --metrics-port: Prometheus and the live view have nothing to reach`);
    for (const t of targets("kfarm-tracker"))
      assert.equal(String(portOf(t)), trackerPort, `Prometheus scrapes the tracker at ${t}; ${TRACKER_UNIT} serves /metrics on ${trackerPort}`);
    assert.ok(
      !["127.0.0.1", "localhost", "::1", undefined].includes(flagValue(tracker.flags, "--host")),
      `${TRACKER_UNIT}: --host must be an interface other hosts reach`,
    );

    const agentPort = flagValue(agent.flags, "--metrics-port");
    assert.ok(agentPort, `${AGENT_UNIT} passes no --metrics-port: Prometheus scrapes agents at ${targets("kfarm-agent").join(", ")}`);
    for (const t of targets("kfarm-agent"))
      assert.equal(String(portOf(t)), agentPort, `Prometheus scrapes an agent at ${t}; ${AGENT_UNIT} serves /metrics on ${agentPort}`);
    assert.equal(
      flagValue(agent.flags, "--metrics-host"),
      "0.0.0.0",
      `${AGENT_UNIT}: --metrics-host 0.0.0.0, or Prometheus on another host cannot scrape the agent (the default is 127.0.0.1)`,
    );
  });

  it("every deployment gives the tracker and the agents the same ports", () => {
    const want = {
      grpc: flagValue(tracker.flags, "--port"),
      data: flagValue(tracker.flags, "--data-port"),
      trackerHttp: flagValue(tracker.flags, "--metrics-port"),
      agentMetrics: flagValue(agent.flags, "--metrics-port"),
    };
    for (const [what, port] of Object.entries(want)) assert.ok(port, `the systemd units give no ${what} port`);
    const same = (where: string, what: keyof typeof want, got: string | number | undefined) =>
      assert.equal(String(got), want[what], `${where}: ${what} port ${got}, the systemd units' is ${want[what]}`);

    // The agent config example, which the install steps copy to the agent unit's --config.
    const example = parseYaml(readFileSync(join(DEPLOY, "agent.example.yaml"), "utf8")) as { tracker: string; agent?: { metricsPort?: number } };
    same("agent.example.yaml tracker:", "grpc", portOf(example.tracker));
    if (example.agent?.metricsPort !== undefined) same("agent.example.yaml agent.metricsPort", "agentMetrics", example.agent.metricsPort);

    // compose.yaml and the Prometheus that scrapes it.
    const compose = parseYaml(readFileSync(join(DEPLOY, "compose.yaml"), "utf8")) as { services: Record<string, { command?: string[] }> };
    const composeTracker = compose.services.tracker!.command!;
    same("compose.yaml tracker", "grpc", flagValue(composeTracker, "--port"));
    same("compose.yaml tracker", "data", flagValue(composeTracker, "--data-port"));
    same("compose.yaml tracker", "trackerHttp", flagValue(composeTracker, "--metrics-port"));
    for (const name of ["agent-vta", "agent-cpu"]) {
      const command = compose.services[name]!.command!;
      same(`compose.yaml ${name}`, "agentMetrics", flagValue(command, "--metrics-port"));
      same(`compose.yaml ${name} --tracker`, "grpc", portOf(flagValue(command, "--tracker")!));
    }
    const composeScrape = parseYaml(readFileSync(join(DEPLOY, "prometheus/compose.yml"), "utf8")) as {
      scrape_configs: Array<{ job_name: string; static_configs: Array<{ targets: string[] }> }>;
    };
    for (const job of composeScrape.scrape_configs) {
      for (const t of job.static_configs.flatMap((c) => c.targets))
        same(`prometheus/compose.yml ${job.job_name} ${t}`, job.job_name === "kfarm-tracker" ? "trackerHttp" : "agentMetrics", portOf(t));
    }

    // The Kubernetes base.
    type Container = { name: string; args?: string[]; ports?: Array<{ name: string; containerPort: number }> };
    const containers = (file: string) =>
      (readYamlDocuments(join(DEPLOY, "kubernetes/base", file)) as Array<{ spec: { template: { spec: { containers: Container[] } } } }>)[0]!.spec.template.spec
        .containers;
    const k8sTracker = containers("tracker-deployment.yaml").find((c) => c.name === "tracker")!;
    same("kubernetes tracker-deployment.yaml", "grpc", flagValue(k8sTracker.args!, "--port"));
    same("kubernetes tracker-deployment.yaml", "data", flagValue(k8sTracker.args!, "--data-port"));
    same("kubernetes tracker-deployment.yaml", "trackerHttp", flagValue(k8sTracker.args!, "--metrics-port"));
    const cuda = containers("agent-cuda-daemonset.yaml").find((c) => c.name === "agent")!;
    same("kubernetes agent-cuda-daemonset.yaml", "agentMetrics", flagValue(cuda.args!, "--metrics-port"));
    const simConfig = (readYamlDocuments(join(DEPLOY, "kubernetes/base/agent-sim-config.yaml")) as Array<{ data: Record<string, string> }>)[0]!.data[
      "agent.yaml"
    ]!;
    same("kubernetes agent-sim-config.yaml", "agentMetrics", (parseYaml(simConfig) as { agent: { metricsPort: number } }).agent.metricsPort);

    // The images: the tracker's default command and every image's health check.
    const dockerfile = (name: string) => readFileSync(join(DEPLOY, "docker", name), "utf8").replace(/\\\n/g, " ");
    const trackerImage = dockerfile("tracker.Dockerfile");
    const cmd = JSON.parse(/^CMD (\[.*\])$/m.exec(trackerImage)![1]!) as string[];
    same("tracker.Dockerfile CMD", "grpc", flagValue(cmd, "--port"));
    same("tracker.Dockerfile CMD", "data", flagValue(cmd, "--data-port"));
    same("tracker.Dockerfile CMD", "trackerHttp", flagValue(cmd, "--metrics-port"));
    same("tracker.Dockerfile KFARM_HEALTH_URL", "trackerHttp", portOf(/KFARM_HEALTH_URL=(\S+)/.exec(trackerImage)![1]!));
    for (const name of ["agent-sim.Dockerfile", "agent-cuda.Dockerfile"])
      same(`${name} KFARM_HEALTH_URL`, "agentMetrics", portOf(/KFARM_HEALTH_URL=(\S+)/.exec(dockerfile(name))![1]!));
  });

  it("deploy/README.md's install steps make what the units expect: the user, the install, the config and secret files", () => {
    const steps = readmeShellLines("systemd");
    assert.ok(steps.length > 0, "deploy/README.md's systemd section has no install steps (```sh blocks)");
    const lineNaming = (path: string) => steps.find((l) => names(l, path));
    for (const u of [tracker, agent]) {
      const user = serviceValue(u.unit, "User");
      if (user)
        assert.ok(
          steps.some((l) => /\buseradd\b/.test(l) && new RegExp(`\\s${user}$`).test(l)),
          `${u.file} runs as ${user}: the steps never create that user (useradd … ${user})`,
        );
      const workdir = serviceValue(u.unit, "WorkingDirectory");
      const state = serviceValue(u.unit, "StateDirectory");
      const paths = [
        ...(workdir ? [workdir] : []),
        ...u.program,
        ...u.flags.filter((w) => w.startsWith("/")),
        ...(u.unit.get("Service") ?? []).filter(([k]) => k === "EnvironmentFile").map(([, v]) => v.replace(/^-/, "")),
      ];
      for (const path of paths) {
        if (state && path === `/var/lib/${state}`) continue; // systemd makes StateDirectory=
        if (workdir && path.startsWith(`${workdir}/`)) {
          assert.ok(
            steps.some((l) => names(l, workdir) && /\b(git clone|cp|tar|install)\b/.test(l)),
            `${u.file} runs ${path}: the steps never put the install in ${workdir}`,
          );
          continue;
        }
        const certs = steps.find((l) => /\bcerts init\s/.test(l) && names(l, dirname(path)));
        const made = lineNaming(path) ?? (/\/(ca|server|client)\.(crt|key)$/.test(path) ? certs : undefined);
        assert.ok(made, `${u.file} reads ${path}: no install step makes it`);
      }
      assert.ok(
        steps.some((l) => /\b(install|cp)\b/.test(l) && l.includes(`deploy/systemd/${u.file}`) && l.includes("/etc/systemd/system")),
        `the steps never install ${u.file} into /etc/systemd/system`,
      );
      const name = u.file.replace(/\.service$/, "");
      assert.ok(
        steps.some((l) => new RegExp(`systemctl enable --now ${name}(\\.service)?$`).test(l)),
        `the steps never run \`systemctl enable --now ${name}\``,
      );
      assert.ok(
        steps.some((l) => new RegExp(`systemctl status ${name}(\\.service)?$`).test(l)),
        `the steps never check \`systemctl status ${name}\``,
      );
    }
    assert.ok(
      steps.some((l) => /systemctl daemon-reload$/.test(l)),
      "the steps never run `systemctl daemon-reload` after installing the units",
    );
    const tokens = flagValue(tracker.flags, "--tokens");
    if (tokens)
      assert.ok(
        steps.some((l) => /\btoken create\b/.test(l) && names(l, tokens)),
        `the tracker unit reads tokens from ${tokens}: the steps never create a token there`,
      );
  });

  it("deploy/README.md's install steps check the ports the units pass: kfarm status, the probes and /metrics", () => {
    const steps = readmeShellLines("systemd");
    const grpc = flagValue(tracker.flags, "--port")!;
    const trackerHttp = flagValue(tracker.flags, "--metrics-port")!;
    const agentMetrics = flagValue(agent.flags, "--metrics-port")!;
    assert.ok(
      steps.some((l) => /\bkfarm status\b/.test(l) && l.includes(`:${grpc}`)),
      `no \`kfarm status --tracker …:${grpc}\` step`,
    );
    for (const [who, port] of [
      ["the tracker", trackerHttp],
      ["an agent", agentMetrics],
    ] as const) {
      for (const path of ["/readyz", "/metrics"]) {
        assert.ok(
          steps.some((l) => /\bcurl\b/.test(l) && l.includes(`:${port}${path}`)),
          `no \`curl …:${port}${path}\` step for ${who}`,
        );
      }
    }
  });
});
