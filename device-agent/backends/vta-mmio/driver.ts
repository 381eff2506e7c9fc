/**
 * The mmio driver: one VTA run as TVM's Pynq driver does it
 * (`VTADeviceRun`, docs/vta-isa.md §11). Write the instruction count and
 * the instruction buffer's physical address to fetch, zero the five base
 * address registers (addresses travel in the instructions), start fetch and
 * start load, compute and store with auto-restart, poll fetch's done bit and
 * then compute's done register, and stop the auto-restarting modules. A
 * device that does not raise done within the timeout is a TIMEOUT; its state
 * is then unknown, and the driver refuses further runs.
 */
import { FarmError } from "../../../protos/index.ts";
import type { RegisterBus } from "./bus.ts";
import { ARG, CONTROL, CTRL_AUTO_RESTART, CTRL_DONE, CTRL_START, VTA_DONE, registerAddress, type VtaModule, type VtaTarget } from "./registers.ts";

export interface VtaMmioDriverOptions {
  /** How long a run may take before the device counts as hung (default 10 s). */
  doneTimeoutMs?: number;
}

export const DEFAULT_DONE_TIMEOUT_MS = 10_000;

/** What one run took, by the board's clock around the done poll. */
export interface RunTiming {
  /** From the start of fetch to compute's done, in nanoseconds. */
  ns: number;
  /** Done-register reads it took. */
  polls: number;
}

export class VtaMmioDriver {
  readonly doneTimeoutMs: number;
  private hung: string | undefined;

  constructor(
    private readonly bus: RegisterBus,
    readonly target: VtaTarget,
    opts: VtaMmioDriverOptions = {},
  ) {
    this.doneTimeoutMs = opts.doneTimeoutMs ?? DEFAULT_DONE_TIMEOUT_MS;
  }

  /** Set once a run timed out: the device may still be running, and nothing else may start. */
  get hungSince(): string | undefined {
    return this.hung;
  }

  /** Refuses any use of a device that timed out: it may still be running, reading and writing its buffers. */
  assertLive(): void {
    if (this.hung) {
      throw new FarmError("TIMEOUT", `the VTA device did not finish an earlier run (${this.hung}); it takes no new work until the board is re-checked`);
    }
  }

  /** Runs `count` instructions at physical address `insnPhys` to completion. */
  run(insnPhys: number, count: number): RunTiming {
    this.assertLive();
    const w = (m: VtaModule, offset: number, value: number) => this.bus.write32(registerAddress(this.target, m, offset), value);
    const r = (m: VtaModule, offset: number) => this.bus.read32(registerAddress(this.target, m, offset));
    w("fetch", ARG.fetch.insnCount, count);
    w("fetch", ARG.fetch.insnAddr, insnPhys);
    w("load", ARG.load.inpAddr, 0);
    w("load", ARG.load.wgtAddr, 0);
    w("compute", ARG.compute.uopAddr, 0);
    w("compute", ARG.compute.biasAddr, 0);
    w("store", ARG.store.outAddr, 0);
    const t0 = process.hrtime.bigint();
    const deadline = t0 + BigInt(this.doneTimeoutMs) * 1_000_000n;
    w("fetch", CONTROL, CTRL_START);
    w("load", CONTROL, CTRL_START | CTRL_AUTO_RESTART);
    w("compute", CONTROL, CTRL_START | CTRL_AUTO_RESTART);
    w("store", CONTROL, CTRL_START | CTRL_AUTO_RESTART);
    let polls = 0;
    const waitFor = (what: string, done: () => boolean) => {
      for (;;) {
        polls++;
        if (done()) return;
        if (process.hrtime.bigint() > deadline) {
          this.hung = `${count} instructions at 0x${insnPhys.toString(16)}: ${what} not raised after ${this.doneTimeoutMs} ms`;
          throw new FarmError(
            "TIMEOUT",
            `the VTA device did not finish a run of ${count} instructions within ${this.doneTimeoutMs} ms (${what} never came); the worker will be replaced and the board re-checked by its canary`,
          );
        }
      }
    };
    waitFor("fetch's done bit", () => (r("fetch", CONTROL) & CTRL_DONE) !== 0);
    waitFor("compute's done register", () => r("compute", ARG.compute.doneRead) === VTA_DONE);
    const ns = Number(process.hrtime.bigint() - t0);
    w("load", CONTROL, 0);
    w("compute", CONTROL, 0);
    w("store", CONTROL, 0);
    return { ns, polls };
  }
}
