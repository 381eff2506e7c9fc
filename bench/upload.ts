/**
 * Benchmark 2: 64 MiB upload and download through the tracker relay
 * (host → tracker → session worker → file, and back).
 *
 * Baseline, same run: plain Node `net` on loopback, 64 MiB from this process
 * to a peer process (and back), in 1 MiB writes with back-pressure.
 */
import { netDownload, netUpload, startPeer } from "./lib/baselines.ts";
import { startCpuMeter } from "./lib/cpu.ts";
import { settle, startBenchFarm } from "./lib/farm.ts";
import { cpuSnapshot } from "./lib/procs.ts";
import { fmtMBps, fmtRatio, mbps, median, nowMs, printTable, verdict, type Row } from "./lib/stats.ts";

export const BULK_BYTES = 64 << 20;
const REPEATS = 3;
export const TARGET_BULK_MBPS = 700;

export async function benchUpload(): Promise<void> {
  const peer = await startPeer();
  let netUp: number[];
  let netDown: number[];
  let netCpu: string;
  try {
    await netUpload(peer.port, BULK_BYTES, 1);
    await netDownload(peer.port, BULK_BYTES, 1);
    const c0 = cpuSnapshot({ host: process.pid, peer: peer.pid });
    netUp = await netUpload(peer.port, BULK_BYTES, REPEATS);
    const c1 = cpuSnapshot({ host: process.pid, peer: peer.pid });
    netDown = await netDownload(peer.port, BULK_BYTES, REPEATS);
    const c2 = cpuSnapshot({ host: process.pid, peer: peer.pid });
    const perGB = (a: Record<string, number>, b: Record<string, number>) =>
      ((b.host! - a.host! + b.peer! - a.peer!) / ((REPEATS * BULK_BYTES) / 1e9)).toFixed(2);
    netCpu = `Node net, both ends: ${perGB(c0, c1)} CPU-s/GB this → peer, ${perGB(c1, c2)} CPU-s/GB peer → this`;
  } finally {
    await peer.stop();
  }

  const farm = await startBenchFarm();
  const data = Buffer.alloc(BULK_BYTES);
  for (let i = 0; i < data.length; i += 4096) data[i] = i & 0xff;
  const up: number[] = [];
  const down: number[] = [];
  let upCpu = "";
  let downCpu = "";
  try {
    await farm.withSession(async (s) => {
      await settle(farm);
      // Warm-up: one transfer each way (JIT, stream windows, page cache).
      await s.upload(data, "warm.bin");
      await s.download("warm.bin");
      await s.remove("warm.bin");

      let meter = startCpuMeter(farm);
      for (let r = 0; r < REPEATS; r++) {
        const t0 = nowMs();
        await s.upload(data, "blob.bin");
        up.push(mbps(BULK_BYTES, nowMs() - t0));
      }
      upCpu = meter.perGB(REPEATS * BULK_BYTES);

      meter = startCpuMeter(farm);
      for (let r = 0; r < REPEATS; r++) {
        const t0 = nowMs();
        const got = await s.download("blob.bin");
        down.push(mbps(BULK_BYTES, nowMs() - t0));
        if (got.length !== BULK_BYTES) throw new Error(`download returned ${got.length} bytes, expected ${BULK_BYTES}`);
      }
      downCpu = meter.perGB(REPEATS * BULK_BYTES);
    });
  } finally {
    await farm.stop();
  }

  const rows: Row[] = [
    bulkRow("upload 64 MiB via tracker relay", median(up), "Node net, this → peer", median(netUp)),
    bulkRow("download 64 MiB via tracker relay", median(down), "Node net, peer → this", median(netDown)),
  ];
  printTable("2. upload / download 64 MiB through the tracker relay (median of 3, MB = 10^6 B)", rows, [
    `upload runs ${up.map((v) => v.toFixed(0)).join(", ")} MB/s; net ${netUp.map((v) => v.toFixed(0)).join(", ")} MB/s`,
    `download runs ${down.map((v) => v.toFixed(0)).join(", ")} MB/s; net ${netDown.map((v) => v.toFixed(0)).join(", ")} MB/s`,
    netCpu,
    `CPU during upload: ${upCpu}`,
    `CPU during download: ${downCpu}`,
  ]);
}

/** A throughput row; `tvm` is TVM's MB/s range for the same transfer. */
export function bulkRow(figure: string, value: number, baselineName: string, baseline: number, tvm: [number, number] = [60, 100]): Row {
  return {
    figure,
    value: fmtMBps(value),
    target: `≥ ${TARGET_BULK_MBPS} MB/s`,
    verdict: verdict(value >= TARGET_BULK_MBPS),
    baseline: `${baselineName} ${fmtMBps(baseline)}`,
    ratio: `${fmtRatio(value / baseline)} net; ${fmtRatio(value / tvm[1])}–${fmtRatio(value / tvm[0])} TVM (${tvm[0]}–${tvm[1]} MB/s)`,
  };
}
