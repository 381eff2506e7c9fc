/**
 * Benchmark 3: a 64 MiB float32 array host → board (`session.array(f32)`,
 * `copyFrom`) and board → host (`toArray()`).
 *
 * Baseline, same run: plain Node `net` on loopback, 64 MiB each way between
 * this process and a peer process.
 */
import { netDownload, netUpload, startPeer } from "./lib/baselines.ts";
import { startCpuMeter } from "./lib/cpu.ts";
import { settle, startBenchFarm } from "./lib/farm.ts";
import { cpuSnapshot } from "./lib/procs.ts";
import { median, mbps, nowMs, printTable } from "./lib/stats.ts";
import { BULK_BYTES, bulkRow } from "./upload.ts";

const REPEATS = 3;
const TVM_TO_BOARD: [number, number] = [74, 92];
const TVM_TO_HOST: [number, number] = [72, 84];

export async function benchArray(): Promise<void> {
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

  const n = BULK_BYTES / 4;
  const host = new Float32Array(n);
  for (let i = 0; i < n; i++) host[i] = i * 0.25;
  const farm = await startBenchFarm();
  const create: number[] = [];
  const copy: number[] = [];
  const read: number[] = [];
  let writeCpu = "";
  let readCpu = "";
  try {
    await farm.withSession(async (s) => {
      await settle(farm);
      // Warm-up both ways.
      const warm = await s.array(host);
      await warm.toArray();
      await warm.free();

      let meter = startCpuMeter(farm);
      for (let r = 0; r < REPEATS; r++) {
        const t0 = nowMs();
        const a = await s.array(host); // alloc + copy in
        create.push(mbps(BULK_BYTES, nowMs() - t0));
        await a.free();
      }
      const a = await s.array({ shape: [n], dtype: "float32" });
      for (let r = 0; r < REPEATS; r++) {
        const t0 = nowMs();
        await a.copyFrom(host);
        copy.push(mbps(BULK_BYTES, nowMs() - t0));
      }
      writeCpu = meter.perGB(2 * REPEATS * BULK_BYTES);

      meter = startCpuMeter(farm);
      for (let r = 0; r < REPEATS; r++) {
        const t0 = nowMs();
        const back = (await a.toArray()) as Float32Array;
        read.push(mbps(BULK_BYTES, nowMs() - t0));
        if (back.length !== n || back[n - 1] !== host[n - 1]) throw new Error("toArray returned other data than was written");
      }
      readCpu = meter.perGB(REPEATS * BULK_BYTES);
      await a.free();
    });
  } finally {
    await farm.stop();
  }

  printTable("3. 64 MiB float32 array host ↔ board (median of 3, MB = 10^6 B)", [
    bulkRow("host → board: copyFrom into an array", median(copy), "Node net, this → peer", median(netUp), TVM_TO_BOARD),
    bulkRow("host → board: session.array(f32) (alloc+copy)", median(create), "Node net, this → peer", median(netUp), TVM_TO_BOARD),
    bulkRow("board → host: toArray()", median(read), "Node net, peer → this", median(netDown), TVM_TO_HOST),
  ], [
    `copyFrom runs ${copy.map((v) => v.toFixed(0)).join(", ")}; array() runs ${create.map((v) => v.toFixed(0)).join(", ")}; toArray runs ${read.map((v) => v.toFixed(0)).join(", ")} MB/s`,
    `net this → peer ${netUp.map((v) => v.toFixed(0)).join(", ")}; peer → this ${netDown.map((v) => v.toFixed(0)).join(", ")} MB/s`,
    netCpu,
    `CPU host → board: ${writeCpu}`,
    `CPU board → host: ${readCpu}`,
  ]);
}
