/**
 * Benchmark 3: a 64 MiB float32 array host → board (`session.array(f32)`,
 * `copyFrom`) and board → host (`toArray()`).
 *
 * Baselines, same run: plain Node `net` on loopback, 64 MiB each way between
 * this process and a peer process, direct and through a relay process.
 */
import { measureBulkBaselines } from "./lib/baselines.ts";
import { startCpuMeter } from "./lib/cpu.ts";
import { settle, startBenchFarm } from "./lib/farm.ts";
import { median, mbps, nowMs, printTable } from "./lib/stats.ts";
import { BULK_BYTES, BULK_REPEATS, baselineNotes, bulkRow, runs } from "./upload.ts";

const TVM_TO_BOARD: [number, number] = [74, 92];
const TVM_TO_HOST: [number, number] = [72, 84];

export async function benchArray(): Promise<void> {
  const base = await measureBulkBaselines(BULK_BYTES, BULK_REPEATS);

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
      const a = await s.array({ shape: [n], dtype: "float32" });
      for (let r = 0; r < BULK_REPEATS; r++) {
        const t0 = nowMs();
        await a.copyFrom(host);
        copy.push(mbps(BULK_BYTES, nowMs() - t0));
      }
      writeCpu = meter.perGB(BULK_REPEATS * BULK_BYTES);
      for (let r = 0; r < BULK_REPEATS; r++) {
        const t0 = nowMs();
        const b = await s.array(host); // alloc + copy in
        create.push(mbps(BULK_BYTES, nowMs() - t0));
        await b.free();
      }

      meter = startCpuMeter(farm);
      for (let r = 0; r < BULK_REPEATS; r++) {
        const t0 = nowMs();
        const back = (await a.toArray()) as Float32Array;
        read.push(mbps(BULK_BYTES, nowMs() - t0));
        if (back.length !== n || back[n - 1] !== host[n - 1]) throw new Error("toArray returned other data than was written");
      }
      readCpu = meter.perGB(BULK_REPEATS * BULK_BYTES);
      await a.free();
    });
  } finally {
    await farm.stop();
  }

  printTable(
    "3. 64 MiB float32 array host ↔ board (median of 3, MB = 10^6 B)",
    [
      bulkRow("host → board: copyFrom into an array", median(copy), base, "out", "direct", TVM_TO_BOARD),
      bulkRow("host → board: session.array(f32) (alloc+copy)", median(create), base, "out", "direct", TVM_TO_BOARD),
      bulkRow("board → host: toArray()", median(read), base, "in", "direct", TVM_TO_HOST),
    ],
    [
      `copyFrom runs ${runs(copy)}; array() runs ${runs(create)}; toArray runs ${runs(read)} MB/s`,
      ...baselineNotes(base),
      `CPU during copyFrom: ${writeCpu}`,
      `CPU during toArray: ${readCpu}`,
    ],
  );
}
