/**
 * Benchmark: the Python SDK against the TypeScript SDK on the same farm, in
 * the same run, on the same lane: the small call (a loaded `nop`) p50 and
 * p99, and a 64 MiB upload. Rounds alternate the two SDKs so a drift of the
 * machine lands on both. The Python side runs in Debian's /usr/bin/python3
 * (bench/python_sdk.py), timing in its own process as this one does.
 */
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import type { Lane } from "../protos/index.ts";
import { compileVadd } from "../tests/helpers/kernels.ts";
import { settle, startBenchFarm, type BenchFarm } from "./lib/farm.ts";
import { fmtMBps, fmtRatio, fmtUs, mbps, median, nowMs, percentile, printTable, type Row } from "./lib/stats.ts";

const PYTHON = "/usr/bin/python3";
const SCRIPT = fileURLToPath(new URL("./python_sdk.py", import.meta.url));
const BUILD_STUBS = fileURLToPath(new URL("../python/kernelfarm/_build_stubs.py", import.meta.url));
const ROUNDS = 3;
const CALLS = 2000;
const WARMUP = 300;
const UPLOAD_BYTES = 64 << 20;
const LANES: Lane[] = ["direct", "relay", "grpc"];

interface Samples {
  calls: number[];
  uploads: number[];
}

async function typescriptRound(farm: BenchFarm, lane: Lane, module: Awaited<ReturnType<typeof compileVadd>>, payload: Buffer, out: Samples): Promise<void> {
  await farm.withSession(async (s) => {
    const t0 = nowMs();
    await s.upload(payload, "blob.bin");
    out.uploads.push(mbps(UPLOAD_BYTES, nowMs() - t0));
    await s.upload(module);
    const nop = (await s.loadModule(module.name)).getFunction("nop");
    await settle(farm);
    for (let i = 0; i < WARMUP; i++) await nop();
    for (let i = 0; i < CALLS; i++) {
      const t = nowMs();
      await nop();
      out.calls.push(nowMs() - t);
    }
  }, lane);
}

async function pythonRound(farm: BenchFarm, lane: Lane, moduleFile: string, out: Samples): Promise<void> {
  const child = spawn(PYTHON, [SCRIPT, farm.tracker.address, lane, moduleFile, String(UPLOAD_BYTES), String(WARMUP), String(CALLS)], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
  const exited = once(child, "close");
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async (): Promise<string> => {
    const r = await lines.next();
    if (r.done) {
      const [code] = (await exited) as [number | null];
      throw new Error(`bench/python_sdk.py exited (${code}) early:\n${stderr}`);
    }
    return r.value;
  };
  if ((await next()) !== "loaded") throw new Error(`bench/python_sdk.py: expected "loaded"\n${stderr}`);
  // The module load tainted the worker: its successor boots now, and must be done before anything is timed.
  await settle(farm);
  child.stdin.end("go\n");
  const r = JSON.parse(await next()) as { lane: string; upload_ms: number; calls_ms: number[] };
  await exited;
  if (r.lane !== lane) throw new Error(`the Python SDK asked for the ${lane} lane and got ${r.lane}`);
  out.uploads.push(mbps(UPLOAD_BYTES, r.upload_ms));
  out.calls.push(...r.calls_ms);
}

export async function benchPython(): Promise<void> {
  const stubs = spawnSync(PYTHON, [BUILD_STUBS], { encoding: "utf8" });
  if (stubs.status !== 0)
    throw new Error(
      `${PYTHON} ${BUILD_STUBS} failed (the Python SDK needs python3-grpcio, python3-protobuf, python3-numpy, protobuf-compiler-grpc):\n${stubs.error?.message ?? stubs.stderr}`,
    );
  const farm = await startBenchFarm();
  const dir = mkdtempSync(join(tmpdir(), "kf-bench-python-"));
  const module = await compileVadd();
  const moduleFile = join(dir, module.name);
  writeFileSync(moduleFile, module.bytes);
  const payload = Buffer.alloc(UPLOAD_BYTES);
  for (let i = 0; i < payload.length; i += 4096) payload[i] = i & 0xff;
  const ts = Object.fromEntries(LANES.map((l) => [l, { calls: [], uploads: [] } as Samples])) as Record<Lane, Samples>;
  const py = Object.fromEntries(LANES.map((l) => [l, { calls: [], uploads: [] } as Samples])) as Record<Lane, Samples>;
  try {
    for (let r = 0; r < ROUNDS; r++) {
      for (const lane of LANES) {
        await farm.waitFree();
        await typescriptRound(farm, lane, module, payload, ts[lane]);
        await farm.waitFree();
        await pythonRound(farm, lane, moduleFile, py[lane]);
      }
    }
  } finally {
    await farm.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  const rows: Row[] = [];
  for (const lane of LANES) {
    const p = py[lane];
    const t = ts[lane];
    for (const q of [50, 99]) {
      const [pv, tv] = [percentile(p.calls, q), percentile(t.calls, q)];
      rows.push({
        figure: `${lane}: nop call p${q}, Python SDK`,
        value: fmtUs(pv),
        target: "",
        verdict: "",
        baseline: `TypeScript SDK ${fmtUs(tv)}`,
        ratio: fmtRatio(pv / tv),
      });
    }
    const [pu, tu] = [median(p.uploads), median(t.uploads)];
    rows.push({
      figure: `${lane}: 64 MiB upload, Python SDK`,
      value: fmtMBps(pu),
      target: "",
      verdict: "",
      baseline: `TypeScript SDK ${fmtMBps(tu)}`,
      ratio: fmtRatio(pu / tu),
    });
  }
  printTable("python: the Python SDK against the TypeScript SDK, same farm, same lane, alternating rounds", rows, [
    `${ROUNDS} rounds per lane and SDK; per round: one 64 MiB upload (median of rounds shown), ${CALLS} nop calls after ${WARMUP} warm-up (percentiles over all rounds)`,
    `Python: ${PYTHON} (Debian's python3-grpcio, python3-protobuf), bench/python_sdk.py; TypeScript: this process`,
    "ratios: Python ÷ TypeScript (calls: above 1 is slower; uploads: below 1 is slower)",
  ]);
}
