/**
 * Benchmark 2: 64 MiB upload and download through the tracker relay
 * (host → tracker → session worker → file, and back).
 *
 * Baselines, same run: plain Node `net` on loopback, 64 MiB from this process
 * to a peer process (and back) in 1 MiB writes with back-pressure; and the
 * same through a relay process that pipes the bytes on (two hops, the
 * tracker's topology with nothing but sockets in the way).
 */
import { measureBulkBaselines, type BulkBaselines } from "./lib/baselines.ts";
import { startCpuMeter } from "./lib/cpu.ts";
import { settle, startBenchFarm } from "./lib/farm.ts";
import { fmtMBps, fmtRatio, mbps, median, nowMs, printTable, verdict, type Row } from "./lib/stats.ts";

export const BULK_BYTES = 64 << 20;
export const BULK_REPEATS = 3;
export const TARGET_BULK_MBPS = 700;

export async function benchUpload(): Promise<void> {
  const base = await measureBulkBaselines(BULK_BYTES, BULK_REPEATS);

  const farm = await startBenchFarm();
  const data = Buffer.alloc(BULK_BYTES);
  for (let i = 0; i < data.length; i += 4096) data[i] = i & 0xff;
  const up: number[] = [];
  const down: number[] = [];
  let upCpu = "";
  let downCpu = "";
  let dedupeFirst = 0;
  const newFile: number[] = [];
  const dedupeAgainMs: number[] = [];
  try {
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
        up.push(mbps(BULK_BYTES, nowMs() - t0));
      }
      upCpu = meter.perGB(BULK_REPEATS * BULK_BYTES);

      meter = startCpuMeter(farm);
      for (let r = 0; r < BULK_REPEATS; r++) {
        const t0 = nowMs();
        const got = await s.download("blob.bin");
        down.push(mbps(BULK_BYTES, nowMs() - t0));
        if (got.length !== BULK_BYTES) throw new Error(`download returned ${got.length} bytes, expected ${BULK_BYTES}`);
      }
      downCpu = meter.perGB(BULK_REPEATS * BULK_BYTES);

      // By digest: a first upload (bytes new to the board: hashed here, a probe, then sent and stored), 3 times with
      // other bytes; then the same bytes again, which the board finds in its store.
      // The store keeps what it is given, so the fair baseline is a plain upload into a new file each time (a
      // replaced file's pages are freed; a kept one's are not): both, alternately.
      const firsts: number[] = [];
      for (let r = 0; r < BULK_REPEATS; r++) {
        data[0] = r + 1;
        let t0 = nowMs();
        await s.upload(data, `new${r}.bin`);
        newFile.push(mbps(BULK_BYTES, nowMs() - t0));
        data[1] = r + 1;
        t0 = nowMs();
        await s.upload(data, `stored${r}.bin`, { dedupe: true });
        firsts.push(mbps(BULK_BYTES, nowMs() - t0));
      }
      dedupeFirst = median(firsts);
      for (let r = 0; r < BULK_REPEATS; r++) {
        const t1 = nowMs();
        await s.upload(data, `again${r}.bin`, { dedupe: true });
        dedupeAgainMs.push(nowMs() - t1);
      }
      const c = (await s.stats()).counters;
      if (c.uploads_reused !== BULK_REPEATS) throw new Error(`the board reused ${c.uploads_reused} uploads, expected ${BULK_REPEATS}`);
    });
  } finally {
    await farm.stop();
  }

  printTable("2. upload / download 64 MiB through the tracker relay (median of 3, MB = 10^6 B)", [
    bulkRow("upload 64 MiB via tracker relay", median(up), base, "out"),
    bulkRow("download 64 MiB via tracker relay", median(down), base, "in"),
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
      baseline: `plain upload ${((BULK_BYTES / median(up)) / 1e3).toFixed(0)} ms`,
      ratio: `${fmtRatio((BULK_BYTES / median(up) / 1e3) / median(dedupeAgainMs))} faster`,
    },
  ], [
    `upload runs ${runs(up)}; download runs ${runs(down)} MB/s`,
    ...baselineNotes(base),
    `CPU during upload: ${upCpu}`,
    `CPU during download: ${downCpu}`,
  ]);
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
 * board → host; `tvm` is TVM's MB/s range for the same transfer.
 */
export function bulkRow(figure: string, value: number, base: BulkBaselines, dir: "out" | "in", tvm: [number, number] = [60, 100]): Row {
  const direct = median(dir === "out" ? base.up : base.down);
  const relayed = median(dir === "out" ? base.relayUp : base.relayDown);
  return {
    figure,
    value: fmtMBps(value),
    target: `≥ ${TARGET_BULK_MBPS} MB/s`,
    verdict: verdict(value >= TARGET_BULK_MBPS),
    baseline: `net ${fmtMBps(direct)}; net relay ${fmtMBps(relayed)}`,
    ratio: `${fmtRatio(value / direct)} net; ${fmtRatio(value / relayed)} relay; ${fmtRatio(value / tvm[1])}–${fmtRatio(value / tvm[0])} TVM (${tvm[0]}–${tvm[1]})`,
  };
}
