/**
 * Benchmark: the mmio driver's own cost per run, on the register-level
 * device model, for TVM's three VTA tutorials.
 *
 * A call on a `vta` board flushes the arguments, relocates each run's stream
 * into the instruction buffer, writes the registers, polls done and
 * invalidates what was stored; the device's time is the board's clock around
 * the done poll (on the model: the simulator running the stream). The
 * driver's overhead per run is the call's wall time minus that device time,
 * divided by the runs. Baseline, same run: the same module on the simulator
 * board (VtaSimBackend), which executes the decoded program directly with no
 * driver, as a call's wall time.
 *
 *   npm run bench -- vta-mmio
 */
import { decodeBundle } from "../protos/index.ts";
import { compileVta, VTA_TUTORIALS, type VtaCompiledModule } from "../host-sdk/index.ts";
import type { ArgValue, Backend } from "../device-agent/backends/backend.ts";
import { VtaMmioBackend } from "../device-agent/backends/vta-mmio/backend.ts";
import { VtaSimBackend } from "../device-agent/backends/vta-sim/backend.ts";
import { conv2dCase, matmulCase, type VtaCase } from "../tests/helpers/vta.ts";
import { fmtRatio, median, printTable, type Row } from "./lib/stats.ts";

const WARMUP = 3;
const CALLS = 15;

const bytes = (a: Int8Array) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

/** `mod` loaded on `board` with `c`'s inputs: a function that calls it once and returns the wall ns and the board's counters after. */
function prepared(board: Backend, mod: VtaCompiledModule, c: VtaCase) {
  const fn = board.load(decodeBundle(mod.bytes), "").functions.get(mod.functions[0]!.name)!;
  const args: ArgValue[] = [...c.inputs, new Int8Array(c.outLength)].map((x) => {
    const array = board.alloc(x.byteLength);
    array.write(0, bytes(x));
    return { kind: "buffer", array };
  });
  return () => {
    board.clearStats();
    const t0 = process.hrtime.bigint();
    board.invoke(fn, args);
    const ns = Number(process.hrtime.bigint() - t0);
    return { ns, counters: board.stats().counters };
  };
}

export async function benchVtaMmio(): Promise<void> {
  const cases: [string, VtaCompiledModule, VtaCase][] = [
    ["matrix_multiply", compileVta(VTA_TUTORIALS.matrix_multiply), matmulCase(VTA_TUTORIALS.matrix_multiply.workload, 1)],
    ["matrix_multiply_opt", compileVta(VTA_TUTORIALS.matrix_multiply_opt), matmulCase(VTA_TUTORIALS.matrix_multiply_opt.workload, 2)],
    ["convolution_opt", compileVta(VTA_TUTORIALS.convolution_opt), conv2dCase(VTA_TUTORIALS.convolution_opt.workload, 3)],
  ];
  const rows: Row[] = [];
  const notes: string[] = [];
  for (const [name, mod, c] of cases) {
    const sim = prepared(new VtaSimBackend(), mod, c);
    const mmio = prepared(new VtaMmioBackend({ device: "model" }), mod, c);
    for (let i = 0; i < WARMUP; i++) {
      sim();
      mmio();
    }
    const simNs: number[] = [];
    const mmioNs: number[] = [];
    const overheadNs: number[] = [];
    let runs = 0;
    let instructions = 0;
    for (let i = 0; i < CALLS; i++) {
      simNs.push(sim().ns);
      const m = mmio();
      mmioNs.push(m.ns);
      runs = m.counters.runs!;
      instructions = m.counters.instructions!;
      overheadNs.push((m.counters.call_ns_total! - m.counters.device_ns_total!) / runs);
    }
    const us = (ns: number) => `${(ns / 1e3).toFixed(1)} µs`;
    rows.push({
      figure: `${name}: driver overhead per run (${runs} run${runs > 1 ? "s" : ""}, ${instructions} instructions a call)`,
      value: us(median(overheadNs)),
      target: "—",
      verdict: "",
      baseline: `simulator board, a call: ${us(median(simNs))}`,
      ratio: fmtRatio((median(overheadNs) * runs) / median(simNs)),
    });
    rows.push({
      figure: `${name}: a call on the device model`,
      value: us(median(mmioNs)),
      target: "—",
      verdict: "",
      baseline: us(median(simNs)),
      ratio: fmtRatio(median(mmioNs) / median(simNs)),
    });
  }
  notes.push(
    `medians of ${CALLS} calls after ${WARMUP} warm-ups, in one process. Overhead: flushes, relocation, register writes, done polls and invalidates — the call's wall time minus the time around the done poll; its ratio is against a whole call on the simulator board.`,
    "On the model the device time is the simulator executing the relocated stream; on a board it is the accelerator, at its clock.",
  );
  printTable("VTA mmio driver on the register-level device model", rows, notes);
}

if (import.meta.url === `file://${process.argv[1]}`) await benchVtaMmio();
