/**
 * Benchmark: what open live-view pages cost the tracker. Sessions run back to
 * back (request → listdir → close, one host, one CPU board) while 10 feed
 * clients — a child process that decodes every message as a page would —
 * are connected; the tracker's CPU per session is compared with the same
 * load and no feed client, in the same run, phases alternating
 * (0, 10, 0, 10 …) so drift on the machine hits both alike.
 *
 *   node --import tsx bench/live-view.ts feed-clients HTTP N   (the child)
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { unpack } from "msgpackr";
import WebSocket from "ws";
import type { TrackerClient } from "../host-sdk/index.ts";
import { startFarm, waitForFreeBoards } from "../tests/helpers/processes.ts";
import { cpuSeconds } from "./lib/procs.ts";
import { fmtRatio, median, printTable, type Row } from "./lib/stats.ts";

const SELF = fileURLToPath(import.meta.url);
const CLIENTS = 10;
const PHASE_MS = 2500;
const ROUNDS = 8;
const WARMUP_MS = 5000;
/** Extra tracker CPU per session that 10 open pages may cost. */
export const TARGET_OVERHEAD = 0.25;

interface Phase {
  clients: number;
  sessions: number;
  trackerCpuS: number;
  wallS: number;
  feed?: FeedChildStats;
}

interface FeedChildStats {
  messages: number;
  bytes: number;
  events: number;
  cpuS: number;
}

async function backToBack(client: TrackerClient, ms: number): Promise<number> {
  let n = 0;
  const until = performance.now() + ms;
  while (performance.now() < until) {
    const s = await client.request("cpu");
    await s.listdir();
    await s.close();
    n++;
  }
  return n;
}

/** The feed clients' process: `open()` connects them (snapshots received), `close()` disconnects and reports. */
async function startFeedChild(http: string, n: number) {
  const proc = spawn(process.execPath, ["--import", "tsx", SELF, "feed-clients", http, String(n)], { stdio: ["pipe", "pipe", "inherit"] });
  let out = "";
  proc.stdout!.on("data", (c: Buffer) => (out += c.toString()));
  // One exit promise for every wait below (a fresh `once` per wait would pile up listeners on the child).
  const exited = once(proc, "exit");
  exited.catch(() => {});
  const nextLine = async (): Promise<string> => {
    for (;;) {
      const nl = out.indexOf("\n");
      if (nl >= 0) {
        const line = out.slice(0, nl);
        out = out.slice(nl + 1);
        return line;
      }
      if (proc.exitCode !== null) throw new Error(`feed clients exited (code ${proc.exitCode})`);
      await Promise.race([once(proc.stdout!, "data"), exited]);
    }
  };
  return {
    async open(): Promise<void> {
      proc.stdin!.write("open\n");
      assert((await nextLine()) === "open");
    },
    async close(): Promise<FeedChildStats> {
      proc.stdin!.write("close\n");
      return JSON.parse(await nextLine()) as FeedChildStats;
    },
    async stop(): Promise<void> {
      proc.stdin!.end();
      await exited;
    },
  };
}

function assert(ok: boolean): asserts ok {
  if (!ok) throw new Error("feed clients: unexpected answer");
}

export async function benchLiveView(): Promise<void> {
  const farm = await startFarm(["cpu:key=cpu"], { trackerArgs: ["--metrics-port", "0"] });
  const pid = farm.tracker.proc.pid!;
  const http = farm.tracker.httpAddress!;
  const child = await startFeedChild(http, CLIENTS);
  try {
    await backToBack(farm.client, WARMUP_MS);
    const phases: Phase[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      // 0/10, 10/0, 0/10 …: a drift over the run falls on both sides alike.
      for (const clients of round % 2 === 0 ? [0, CLIENTS] : [CLIENTS, 0]) {
        if (clients) await child.open();
        await waitForFreeBoards(farm.client, 1);
        const cpu0 = cpuSeconds(pid);
        const t0 = performance.now();
        const sessions = await backToBack(farm.client, PHASE_MS);
        const wallS = (performance.now() - t0) / 1e3;
        const trackerCpuS = cpuSeconds(pid) - cpu0;
        const feed = clients ? await child.close() : undefined;
        phases.push({ clients, sessions, trackerCpuS, wallS, ...(feed ? { feed } : {}) });
      }
    }
    const of = (clients: number) => phases.filter((p) => p.clients === clients);
    const perSession = (ps: Phase[]) => median(ps.map((p) => (p.trackerCpuS / p.sessions) * 1e3));
    const rate = (ps: Phase[]) => median(ps.map((p) => p.sessions / p.wallS));
    const util = (ps: Phase[]) => median(ps.map((p) => p.trackerCpuS / p.wallS));
    const idle = of(0);
    const watched = of(CLIENTS);
    const msPer0 = perSession(idle);
    const msPer10 = perSession(watched);
    // Per round, 10 clients against 0 next to it; the median of those ratios.
    const ratios = idle.map((p, i) => watched[i]!.trackerCpuS / watched[i]!.sessions / (p.trackerCpuS / p.sessions));
    const pairRatio = median(ratios);
    const overhead = pairRatio - 1;
    const feeds = watched.map((p) => p.feed!);
    const perClientMsgs = median(watched.map((p) => p.feed!.messages / CLIENTS / p.wallS));
    const perClientKiB = median(watched.map((p) => p.feed!.bytes / CLIENTS / p.wallS / 1024));
    const eventsPerSession = median(watched.map((p) => p.feed!.events / CLIENTS / p.sessions));
    const rows: Row[] = [
      {
        figure: `tracker CPU per session, ${CLIENTS} feed clients`,
        value: `${msPer10.toFixed(3)} ms`,
        target: `≤ +${(TARGET_OVERHEAD * 100).toFixed(0)}%`,
        verdict: overhead <= TARGET_OVERHEAD ? "met" : "MISSED",
        baseline: `0 clients ${msPer0.toFixed(3)} ms`,
        ratio: `${fmtRatio(pairRatio)} (${overhead >= 0 ? "+" : ""}${(overhead * 100).toFixed(1)}%)`,
      },
      {
        figure: "  tracker CPU utilisation",
        value: `${(util(watched) * 100).toFixed(1)}% of a CPU`,
        target: "",
        verdict: "",
        baseline: `${(util(idle) * 100).toFixed(1)}%`,
        ratio: fmtRatio(util(watched) / util(idle)),
      },
      {
        figure: "  sessions/s back to back",
        value: rate(watched).toFixed(0),
        target: "",
        verdict: "",
        baseline: rate(idle).toFixed(0),
        ratio: fmtRatio(rate(watched) / rate(idle)),
      },
      {
        figure: "  feed per client",
        value: `${perClientMsgs.toFixed(0)} msg/s, ${perClientKiB.toFixed(1)} KiB/s`,
        target: "",
        verdict: "",
        baseline: "",
        ratio: `${eventsPerSession.toFixed(1)} events/session`,
      },
    ];
    printTable(`live view: tracker CPU with ${CLIENTS} open feed clients, sessions back to back`, rows, [
      `${ROUNDS} rounds of ${PHASE_MS / 1e3} s per phase (0 then ${CLIENTS} clients, then ${CLIENTS} then 0, …); medians; ratio: median over rounds of ${CLIENTS} clients / 0 clients. One host, one CPU board, request → listdir → close.`,
      `per-round ratios: ${ratios.map((r) => r.toFixed(2)).join(", ")}.`,
      `tracker CPU per phase (ms per session), 0 clients: ${idle.map((p) => ((p.trackerCpuS / p.sessions) * 1e3).toFixed(3)).join(", ")}; ${CLIENTS} clients: ${watched.map((p) => ((p.trackerCpuS / p.sessions) * 1e3).toFixed(3)).join(", ")}.`,
      `the ${CLIENTS} clients (one child process, decoding every message) used ${median(feeds.map((f, i) => f.cpuS / watched[i]!.wallS)).toFixed(2)} CPU; they count as load on the machine, not as tracker CPU.`,
    ]);
  } finally {
    await child.stop();
    await farm.stop();
  }
}

/** The child: on "open", N feed clients that decode everything; on "close", their figures. Ends with stdin. */
async function feedClientsMain(http: string, n: number): Promise<void> {
  let sockets: WebSocket[] = [];
  let stats: FeedChildStats = { messages: 0, bytes: 0, events: 0, cpuS: 0 };
  let cpu0 = process.cpuUsage();
  const open = () => {
    stats = { messages: 0, bytes: 0, events: 0, cpuS: 0 };
    let snapshots = 0;
    let counting = false;
    sockets = Array.from({ length: n }, () => {
      const ws = new WebSocket(`ws://${http}/feed`, { perMessageDeflate: false });
      ws.on("error", (err) => {
        console.error(`feed client: ${err.message}`);
        process.exit(1);
      });
      ws.on("message", (data: Buffer) => {
        const msg = unpack(data) as { kind: string; events?: unknown[] };
        if (msg.kind === "snapshot" && ++snapshots === n) {
          counting = true;
          cpu0 = process.cpuUsage();
          process.stdout.write("open\n");
          return;
        }
        if (!counting) return;
        stats.messages++;
        stats.bytes += data.length;
        stats.events += msg.kind === "event" ? 1 : msg.kind === "events" ? msg.events!.length : 0;
      });
      return ws;
    });
  };
  const close = async () => {
    const u = process.cpuUsage(cpu0);
    stats.cpuS = (u.user + u.system) / 1e6;
    await Promise.all(sockets.map((ws) => new Promise<void>((resolve) => (ws.once("close", () => resolve()), ws.close()))));
    sockets = [];
    process.stdout.write(`${JSON.stringify(stats)}\n`);
  };
  let buffered = "";
  let queue = Promise.resolve();
  process.stdin.setEncoding("utf8");
  process.stdin.on("data", (chunk: string) => {
    buffered += chunk;
    let nl;
    while ((nl = buffered.indexOf("\n")) >= 0) {
      const cmd = buffered.slice(0, nl).trim();
      buffered = buffered.slice(nl + 1);
      queue = queue.then(() => (cmd === "open" ? open() : cmd === "close" ? close() : undefined));
    }
  });
  await once(process.stdin, "end");
  await queue;
  for (const ws of sockets) ws.terminate();
  process.exit(0);
}

if (process.argv[1] === SELF && process.argv[2] === "feed-clients") {
  await feedClientsMain(process.argv[3]!, Number(process.argv[4]));
}
