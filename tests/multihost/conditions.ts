/**
 * The farm's work across hosts under one network condition: grants, small
 * calls, a 64 MiB upload on each lane, and a measure() batch, from client1
 * to boards on agent1/agent2, with a raw TCP transfer over the same links
 * (client1 → agent1) in the same run as the upload's baseline. The
 * multi-host test checks what it returns; `npm run bench -- across-hosts`
 * prints it with more repeats.
 */
import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Lane } from "../../protos/index.ts";
import { median, type BedFarm, type Driver } from "./farm.ts";
import type { LinkSettings } from "./netbed.ts";

/** A named network condition, applied to every host's link. */
export interface Condition {
  name: string;
  /** Set on every link, both directions: a packet between two hosts crosses two links (sender's up, receiver's down). */
  link: Required<Pick<LinkSettings, "delayMs" | "jitterMs" | "lossPct">>;
}

/** 0 ms; 20 ms one way between any two hosts (10 ms on each link, ±1 ms jitter); about 1 % loss each way (0.5 % on each link). */
export const CONDITIONS: Condition[] = [
  { name: "0 ms", link: { delayMs: 0, jitterMs: 0, lossPct: 0 } },
  { name: "20 ms", link: { delayMs: 10, jitterMs: 1, lossPct: 0 } },
  { name: "1 % loss", link: { delayMs: 0, jitterMs: 0, lossPct: 0.5 } },
];

export const UPLOAD_BYTES = 64 << 20;

export interface ConditionFigures {
  condition: string;
  /** request() → session open, a free board waiting (ms, each). */
  grantMs: number[];
  /** A nop call's round trip host → worker (ms, each). */
  callMs: number[];
  /** 64 MiB upload per lane (ms, each). */
  uploadMs: Partial<Record<Lane, number[]>>;
  /** 64 MiB raw TCP, client1 → agent1, acknowledged at the end (ms, each). */
  rawMs: number[];
  /** measure(): candidates, wall time, outcomes. */
  measure: { candidates: number; ms: number; outcomes: Record<string, number>; boards: string[] };
}

export interface ConditionRun {
  grants: number;
  calls: number;
  uploads: number;
  lanes: Lane[];
  candidates: number;
  /** How many times each candidate's timing runs the kernel (default 1). */
  number?: number;
}

/** `sink` is a driver on agent1's host, listening for the raw transfer. */
export async function runCondition(farm: BedFarm, sink: { driver: Driver; port: number }, c: Condition, run: ConditionRun): Promise<ConditionFigures> {
  await farm.bed.allLinks({ ...c.link, dir: "both" });
  const client = farm.clients.client1;
  const fig: ConditionFigures = {
    condition: c.name,
    grantMs: [],
    callMs: [],
    uploadMs: {},
    rawMs: [],
    measure: { candidates: 0, ms: 0, outcomes: {}, boards: [] },
  };

  for (let i = 0; i < run.grants; i++) {
    const s = await client.do("request", { key: "cpu" });
    fig.grantMs.push(s.ms);
    await client.do("close", { sid: s.sid });
  }

  const s = await client.do("request", { key: "cpu", labels: { host: "agent1" } });
  await client.do("load", { sid: s.sid });
  fig.callMs = (await client.do("calls", { sid: s.sid, n: run.calls })).times;
  await client.do("close", { sid: s.sid });

  const sinkAddress = `${farm.bed.host("agent1").address}:${sink.port}`;
  for (const lane of run.lanes) {
    const times: number[] = [];
    for (let i = 0; i < run.uploads; i++) {
      const up = await client.do("request", { key: "cpu", labels: { host: "agent1" }, route: lane });
      times.push((await client.do("upload", { sid: up.sid, bytes: UPLOAD_BYTES })).ms);
      await client.do("close", { sid: up.sid });
      if (lane === run.lanes[0]) fig.rawMs.push((await client.do("rawsend", { address: sinkAddress, bytes: UPLOAD_BYTES })).ms);
    }
    fig.uploadMs[lane] = times;
  }

  const resultsFile = join(tmpdir(), `kfarm-multihost-${process.pid}-${c.name.replace(/\W+/g, "")}.jsonl`);
  rmSync(resultsFile, { force: true });
  const m = await client.do("measure", { key: "cpu", n: run.candidates, resultsFile, number: run.number ?? 1 });
  rmSync(resultsFile, { force: true });
  fig.measure = { candidates: run.candidates, ms: m.ms, outcomes: {}, boards: [...new Set<string>(m.results.map((r: { board: string }) => r.board))].sort() };
  for (const r of m.results as Array<{ outcome: string }>) fig.measure.outcomes[r.outcome] = (fig.measure.outcomes[r.outcome] ?? 0) + 1;
  return fig;
}

/** One line per condition: medians, and the upload against raw TCP over the same links. */
export function figureRows(figs: ConditionFigures[]): string[] {
  const mbps = (ms: number) => UPLOAD_BYTES / 1e6 / (ms / 1e3);
  const rows = ["| condition | grant p50 | call p50 | raw TCP 64 MiB | upload direct | relay | grpc | measure() |", "|---|---|---|---|---|---|---|---|"];
  for (const f of figs) {
    const raw = median(f.rawMs);
    const up = (lane: Lane) => {
      const t = f.uploadMs[lane];
      return t?.length ? `${median(t).toFixed(0)} ms (${mbps(median(t)).toFixed(0)} MB/s, ${(raw / median(t)).toFixed(2)}× raw)` : "—";
    };
    const ok = f.measure.outcomes.OK ?? 0;
    rows.push(
      `| ${f.condition} | ${median(f.grantMs).toFixed(1)} ms | ${median(f.callMs).toFixed(2)} ms | ${raw.toFixed(0)} ms (${mbps(raw).toFixed(0)} MB/s) | ${up("direct")} | ${up("relay")} | ${up("grpc")} | ${ok}/${f.measure.candidates} OK in ${f.measure.ms.toFixed(0)} ms |`,
    );
  }
  return rows;
}
