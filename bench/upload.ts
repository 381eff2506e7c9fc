/**
 * Benchmark 2: 64 MiB upload and download on each lane: direct (host →
 * session worker), relay (host → tracker data port → worker) and grpc (host
 * → tracker gRPC relay → worker), and back.
 *
 * Baselines, same run: plain Node `net` on loopback, 64 MiB from this process
 * to a peer process (and back) in 1 MiB writes with back-pressure; and the
 * same through a relay process that pipes the bytes on (two hops, the
 * tracker's topology with nothing but sockets in the way).
 */
import { LANES, type Lane } from "../protos/index.ts";
import { hashTree } from "../host-sdk/tree-hasher.ts";
import { measureBulkBaselines, type BulkBaselines } from "./lib/baselines.ts";
import { startCpuMeter } from "./lib/cpu.ts";
import { settle, startBenchFarm } from "./lib/farm.ts";
import { fmtMBps, fmtRatio, mbps, median, nowMs, printTable, verdict, type Row } from "./lib/stats.ts";

export const BULK_BYTES = 64 << 20;
export const BULK_REPEATS = 3;
export const TARGET_BULK_MBPS = 700;
/** Rounds of the by-digest comparison (plain, new bytes, held bytes each): medians of these. */
const DEDUPE_ROUNDS = 7;

export async function benchUpload(): Promise<void> {
  const base = await measureBulkBaselines(BULK_BYTES, BULK_REPEATS);

  const farm = await startBenchFarm();
  const data = Buffer.alloc(BULK_BYTES);
  for (let i = 0; i < data.length; i += 4096) data[i] = i & 0xff;
  const lanes: Record<Lane, { up: number[]; down: number[]; upCpu: string; downCpu: string }> = {
    direct: { up: [], down: [], upCpu: "", downCpu: "" },
    relay: { up: [], down: [], upCpu: "", downCpu: "" },
    grpc: { up: [], down: [], upCpu: "", downCpu: "" },
  };
  let dedupeFirst = 0;
  const newFile: number[] = [];
  const dedupeAgainMs: number[] = [];
  /** The host's tree digest of the held bytes alone, timed after each round: what a held upload spends before its probe. */
  const hashMs: number[] = [];
  try {
    for (const lane of LANES) {
      const m = lanes[lane];
      await farm.withSession(async (s) => {
        await settle(farm);
        // Warm-up: one transfer each way (JIT, stream windows, page cache).
        await s.upload(data, "warm.bin");
        await s.download("warm.bin");
        await s.remove("warm.bin");
        let meter = startCpuMeter(farm);
        for (let r = 0; r < BULK_REPEATS; r++) {
          const t0 = nowMs();
          await s.upload(data, "blob.bin");
          m.up.push(mbps(BULK_BYTES, nowMs() - t0));
        }
        m.upCpu = meter.perGB(BULK_REPEATS * BULK_BYTES);
        meter = startCpuMeter(farm);
        for (let r = 0; r < BULK_REPEATS; r++) {
          const t0 = nowMs();
          const got = await s.download("blob.bin");
          m.down.push(mbps(BULK_BYTES, nowMs() - t0));
          if (got.length !== BULK_BYTES) throw new Error(`download returned ${got.length} bytes, expected ${BULK_BYTES}`);
        }
        m.downCpu = meter.perGB(BULK_REPEATS * BULK_BYTES);
      }, lane);
      await farm.waitFree();
    }
    await farm.withSession(async (s) => {
      await settle(farm);
      // By digest, DEDUPE_ROUNDS rounds of three, alternating so that each compares with its baseline in the same
      // stretch of time: a plain upload into a new file (the fair baseline: the store keeps what it is given, and
      // a replaced file's pages are freed where a kept one's are not), bytes new to the board by digest (hashed
      // here, a probe, then sent and stored), and bytes the board holds by digest (stored before the first round).
      const held = Buffer.from(data);
      held[2] = 0xee;
      await s.upload(held, "held.bin", { dedupe: true });
      const firsts: number[] = [];
      for (let r = 0; r < DEDUPE_ROUNDS; r++) {
        data[0] = r + 1;
        let t0 = nowMs();
        await s.upload(data, "new.bin");
        newFile.push(mbps(BULK_BYTES, nowMs() - t0));
        data[1] = r + 1;
        t0 = nowMs();
        await s.upload(data, "stored.bin", { dedupe: true });
        firsts.push(mbps(BULK_BYTES, nowMs() - t0));
        t0 = nowMs();
        await s.upload(held, "again.bin", { dedupe: true });
        dedupeAgainMs.push(nowMs() - t0);
        for (const name of ["new.bin", "stored.bin", "again.bin"]) await s.remove(name);
        t0 = nowMs();
        await hashTree(held);
        hashMs.push(nowMs() - t0);
      }
      dedupeFirst = median(firsts);
      const c = (await s.stats()).counters;
      if (c.uploads_reused !== DEDUPE_ROUNDS) throw new Error(`the board reused ${c.uploads_reused} uploads, expected ${DEDUPE_ROUNDS}`);
    });
  } finally {
    await farm.stop();
  }

  printTable(
    "2. upload / download 64 MiB on each lane (median of 3, MB = 10^6 B)",
    [
      ...LANES.flatMap((lane) => [
        bulkRow(`upload 64 MiB, ${lane} lane`, median(lanes[lane].up), base, "out", lane),
        bulkRow(`download 64 MiB, ${lane} lane`, median(lanes[lane].down), base, "in", lane),
      ]),
      {
        figure: "upload 64 MiB by digest (dedupe), new bytes",
        value: fmtMBps(dedupeFirst),
        target: "",
        verdict: "",
        baseline: `plain upload into a new file ${fmtMBps(median(newFile))}`,
        ratio: `${fmtRatio(dedupeFirst / median(newFile))} (hashed on the host, a probe first)`,
      },
      {
        figure: "  the same bytes again: the board has them",
        value: `${median(dedupeAgainMs).toFixed(1)} ms`,
        target: "",
        verdict: "",
        baseline: `plain upload into a new file ${(BULK_BYTES / median(newFile) / 1e3).toFixed(0)} ms`,
        ratio: `${fmtRatio(BULK_BYTES / median(newFile) / 1e3 / median(dedupeAgainMs))} faster`,
      },
    ],
    [
      ...LANES.map((lane) => `${lane}: upload runs ${runs(lanes[lane].up)}; download runs ${runs(lanes[lane].down)} MB/s`),
      `by digest: held-bytes runs ${runs(dedupeAgainMs)} ms; the host's tree digest of them alone (host-sdk/tree-hasher.ts) ${runs(hashMs)} ms (median ${median(hashMs).toFixed(1)})`,
      ...baselineNotes(base),
      ...LANES.flatMap((lane) => [`CPU during upload, ${lane}: ${lanes[lane].upCpu}`, `CPU during download, ${lane}: ${lanes[lane].downCpu}`]),
    ],
  );
}

export function runs(v: readonly number[]): string {
  return v.map((x) => x.toFixed(0)).join(", ");
}

export function baselineNotes(base: BulkBaselines): string[] {
  return [
    `Node net direct: out ${runs(base.up)}, in ${runs(base.down)} MB/s; via relay process: out ${runs(base.relayUp)}, in ${runs(base.relayDown)} MB/s`,
    base.cpu,
  ];
}

/**
 * A throughput row: `dir` "out" is host → board (baseline this → peer), "in"
 * board → host; `tvm` is TVM's MB/s range for the same transfer. The target
 * is the lane's: direct ≥ 0.8× Node `net` between two processes, relay ≥
 * 0.8× a raw socket relay; the grpc lane has the absolute one of the spine.
 */
export function bulkRow(figure: string, value: number, base: BulkBaselines, dir: "out" | "in", lane: Lane = "grpc", tvm: [number, number] = [60, 100]): Row {
  const direct = median(dir === "out" ? base.up : base.down);
  const relayed = median(dir === "out" ? base.relayUp : base.relayDown);
  const [target, met] =
    lane === "direct"
      ? ["≥ 0.8× net", value >= 0.8 * direct]
      : lane === "relay"
        ? ["≥ 0.8× net relay", value >= 0.8 * relayed]
        : [`≥ ${TARGET_BULK_MBPS} MB/s`, value >= TARGET_BULK_MBPS];
  return {
    figure,
    value: fmtMBps(value),
    target,
    verdict: verdict(met),
    baseline: `net ${fmtMBps(direct)}; net relay ${fmtMBps(relayed)}`,
    ratio: `${fmtRatio(value / direct)} net; ${fmtRatio(value / relayed)} relay; ${fmtRatio(value / tvm[1])}–${fmtRatio(value / tvm[0])} TVM (${tvm[0]}–${tvm[1]})`,
  };
}
