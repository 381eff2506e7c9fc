/**
 * Tuning across hosts (issue 28): the VTA tuner (examples/tune-vta-conv2d.ts)
 * run as a user would, on a client host of the multi-host bed
 * (tests/multihost/: tracker, agent1, agent2, client1 in network namespaces
 * of their own, joined by the bed's wire at 0 ms), against vta-sim boards on
 * the two agent hosts — 1 board, then 8 (4 per agent host) — and how much
 * faster 8 boards tune than 1:
 *
 *   npm run bench -- tune-hosts        (root: namespaces and TUN devices)
 *   KFARM_IP=$PWD/agent-bundle-out/iproute2/ip /tmp/b/kfarm-agent/bench tune-hosts
 *                                      (a host without iproute2: bench/lib/pack-iproute2.sh)
 *
 * Each run is `ip netns exec <client1> node examples/tune-vta-conv2d.ts
 * --tracker <tracker's bed address> --key vta --workload W --candidates N
 * --seed 1 --boards B --out DIR` with a fresh DIR (a results file left there
 * would be resumed, not measured), and the figures are the summary it writes
 * (measure()'s report: candidates/s, busy, each board's idle time by cause,
 * compiles; the tuning process's own CPU) and its results file (which board,
 * hence which agent host, measured each candidate).
 *
 * Environment: TUNE_BOARDS (1,8), TUNE_BOARDS_PER_AGENT (4), TUNE_CANDIDATES
 * (1000: 1–2 minutes on 1 board), TUNE_WORKLOAD (tutorial; or small), TUNE_SEED (1), TUNE_OUT (a
 * folder for the runs' output; default a temporary one), TUNE_ARGS (more
 * options for the example, e.g. "--search evolution"). Without root, `ip`,
 * /dev/net/tun or cc it says why and skips.
 */
import type { ChildProcess } from "node:child_process";
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import type { MeasureReport } from "../host-sdk/index.ts";
import { formatTable } from "../examples/lib/search.ts";
import { spawnNode, waitFor } from "../tests/helpers/processes.ts";
import { startBedFarm, type AgentHost, type BedFarm } from "../tests/multihost/farm.ts";
import { netBedUnavailable } from "../tests/multihost/netbed.ts";

const EXAMPLE = fileURLToPath(new URL("../examples/tune-vta-conv2d.ts", import.meta.url));
const SUMMARY = "tune-vta-conv2d-summary.json";
const RESULTS = "tune-vta-conv2d.jsonl";
const KEY = "vta";
const AGENTS: readonly AgentHost[] = ["agent1", "agent2"];

const env = (name: string, fallback: string) => process.env[name] || fallback;
const list = (s: string) =>
  s
    .split(",")
    .map((x) => x.trim())
    .filter(Boolean);
function positive(name: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a whole number ≥ 1, got ${JSON.stringify(value)}`);
  return n;
}

/** What the example writes (tune-vta-conv2d-summary.json), the parts read here. */
interface TuneSummary {
  seconds: number;
  hostCpuSeconds: number;
  best?: { cycles: number; schedule: string };
  farm: MeasureReport;
}

interface TuneRun {
  boards: number;
  dir: string;
  summary: TuneSummary;
  /** Candidates measured on each agent host's boards (from the results file's board ids, "<agent>/<board>"). */
  perHost: Record<string, number>;
}

/** Runs the tuner on `host` to its end; its output goes to DIR/tune.log, its progress lines to stderr. */
async function runTuner(farm: BedFarm, host: string, argv: string[], dir: string): Promise<void> {
  const log = join(dir, "tune.log");
  // The tuner's own log level; the example prints its tables on stdout either way.
  const child: ChildProcess = spawnNode(["--import", "tsx", EXAMPLE, ...argv], { netns: farm.bed.host(host).ns, env: { KFARM_LOG: "warn" } });
  const kill = () => child.kill("SIGKILL");
  process.on("exit", kill);
  let tail = "";
  const keep = (line: string) => {
    appendFileSync(log, `${line}\n`);
    tail = `${tail}${line}\n`.slice(-4000);
  };
  createInterface({ input: child.stdout! }).on("line", (line) => {
    keep(line);
    if (/^\s+\d+\/\d+ measured;/.test(line)) console.error(`tune-hosts: ${line.trim()}`);
  });
  createInterface({ input: child.stderr! }).on("line", keep);
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  process.off("exit", kill);
  if (code !== 0) throw new Error(`the tuner exited ${code} (${argv.join(" ")}); the end of ${log}:\n${tail}`);
}

function perHost(resultsFile: string): Record<string, number> {
  const counts: Record<string, number> = Object.fromEntries(AGENTS.map((a) => [a, 0]));
  for (const line of readFileSync(resultsFile, "utf8").split("\n")) {
    if (!line.trim()) continue;
    const board = (JSON.parse(line) as { board?: string }).board;
    if (!board) continue; // refused by the compiler: no board saw it
    const agent = board.split("/")[0]!;
    counts[agent] = (counts[agent] ?? 0) + 1;
  }
  return counts;
}

export async function benchTuneHosts(): Promise<void> {
  const skip = netBedUnavailable();
  if (skip) {
    console.log(`\ntune-hosts: skipped: ${skip}`);
    return;
  }
  const perAgent = positive("TUNE_BOARDS_PER_AGENT", env("TUNE_BOARDS_PER_AGENT", "4"));
  const all = perAgent * AGENTS.length;
  const wanted = list(env("TUNE_BOARDS", "1,8")).map((b) => positive("TUNE_BOARDS", b));
  const boardCounts = wanted.filter((b) => b <= all);
  if (boardCounts.length < wanted.length) console.log(`tune-hosts: the bed has ${all} boards; left out: ${wanted.filter((b) => b > all).join(", ")} boards`);
  const candidates = positive("TUNE_CANDIDATES", env("TUNE_CANDIDATES", "1000"));
  const workload = env("TUNE_WORKLOAD", "tutorial");
  const seed = env("TUNE_SEED", "1");
  const extra = env("TUNE_ARGS", "").split(" ").filter(Boolean);
  const out = process.env.TUNE_OUT || mkdtempSync(join(tmpdir(), "kfarm-tune-hosts-"));
  mkdirSync(out, { recursive: true });

  const farm = await startBedFarm({ boards: (agent) => Array.from({ length: perAgent }, (_, i) => `vta-sim:key=${KEY},name=${agent}-vta${i},host=${agent}`) });
  const runs: TuneRun[] = [];
  try {
    const allFree = async () => {
      const boards = (await farm.clients.client1.do("summary")).boards as { key: string; state: string }[];
      return boards.filter((b) => b.key === KEY && b.state === "free").length === all;
    };
    for (const boards of boardCounts) {
      // Every board attached and free: the first run's, and each later run's after the last one's sessions closed.
      await waitFor(`the ${all} ${KEY} boards free`, allFree, 60_000, 100);
      // A folder of its own each time: a results file already there would be resumed, its results reused.
      const dir = mkdtempSync(join(out, `boards-${boards}-`));
      const argv = [
        "--tracker",
        farm.address,
        "--key",
        KEY,
        "--workload",
        workload,
        "--candidates",
        String(candidates),
        "--seed",
        seed,
        "--boards",
        String(boards),
        "--out",
        dir,
        ...extra,
      ];
      console.error(`tune-hosts: ${boards} board(s): ${argv.join(" ")}`);
      await runTuner(farm, "client1", argv, dir);
      const summary = JSON.parse(readFileSync(join(dir, SUMMARY), "utf8")) as TuneSummary;
      runs.push({ boards, dir, summary, perHost: perHost(join(dir, RESULTS)) });
    }
  } finally {
    await farm.stop();
  }

  const base = runs.find((r) => r.boards === 1) ?? runs[0];
  const rows = runs.map((r) => {
    const f = r.summary.farm;
    const rate = f.candidatesPerSecond;
    const speedup = base ? rate / base.summary.farm.candidatesPerSecond : NaN;
    const idle = (k: keyof MeasureReport["boards"][number]["idle"]) => (f.boards.reduce((a, b) => a + b.idle[k], 0) / Math.max(f.boards.length, 1)).toFixed(1);
    return [
      r.boards,
      f.boards.length,
      f.candidates,
      r.summary.seconds.toFixed(1),
      rate.toFixed(2),
      `${speedup.toFixed(2)}×`,
      `${((100 * speedup * (base?.boards ?? 1)) / r.boards).toFixed(0)} %`,
      `${(100 * f.busy).toFixed(0)} %`,
      idle("compile"),
      idle("host"),
      idle("transfer"),
      idle("session"),
      idle("tail"),
      `${f.compiles.medianSeconds.toFixed(3)} / ${f.compiles.maxSeconds.toFixed(2)}`,
      f.queueDepth,
      `${((100 * r.summary.hostCpuSeconds) / r.summary.seconds).toFixed(0)} %`,
      AGENTS.map((a) => r.perHost[a] ?? 0).join(" / "),
      r.summary.best ? Math.round(r.summary.best.cycles).toLocaleString("en-US") : "—",
    ];
  });
  console.log(
    `\nTuning across hosts: examples/tune-vta-conv2d.ts on client1 → tracker → vta-sim boards on agent1 and agent2 (${perAgent} each), ` +
      `through the bed's wire at 0 ms; workload ${workload}, ${candidates} candidates, seed ${seed}${extra.length ? `, ${extra.join(" ")}` : ""}; ` +
      `${availableParallelism()} CPU(s) here, shared by every host; output in ${out}`,
  );
  console.log(
    formatTable(
      [
        "boards",
        "used",
        "measured",
        "seconds",
        "candidates/s",
        "speedup",
        "efficiency",
        "busy",
        "idle compile s",
        "host s",
        "transfer s",
        "session s",
        "tail s",
        "compile p50/max s",
        "queue depth",
        "tuner CPU",
        "on agent1 / agent2",
        "best cycles",
      ],
      rows,
    ),
  );
  console.log(
    `target: ≥ 7× on 8 boards (≥ 88 % efficiency)${base && base.boards !== 1 ? `; speedup here is over the ${base.boards}-board run` : ""}. idle columns: seconds per board, mean over the boards; ` +
      "tuner CPU: the tuning process's CPU time ÷ its seconds (100 % = one core: its search, compiles and checks share one thread).",
  );
  // Candidates on both agent hosts wherever one host's boards could not have served the run alone.
  const oneHost = runs.filter((r) => r.boards > perAgent && AGENTS.some((a) => !r.perHost[a]));
  if (oneHost.length > 0)
    throw new Error(
      `runs on more boards than one host has measured on one host only: ${oneHost.map((r) => `${r.boards} boards (${JSON.stringify(r.perHost)}, ${r.dir})`).join("; ")}`,
    );
  const reused = runs.filter((r) => r.summary.farm.reused > 0);
  if (reused.length > 0) throw new Error(`runs reused results from a results file: ${reused.map((r) => r.dir).join(", ")}`);
}
