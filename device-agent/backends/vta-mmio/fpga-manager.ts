/**
 * Loading a VTA bitstream through Linux's FPGA manager (TVM's
 * `program_fpga`): the bitstream goes to `lib/firmware/`, its name to the
 * manager's `firmware` file (flags 0: a full reconfiguration), and the
 * manager's `state` must read `operating` after. Before anything is written,
 * the companion JSON (TVM's vta_config.json) must describe the board's VTA
 * configuration; a bitstream of another one is refused, naming both.
 *
 * The agent runs this (it owns the board's labels); `root` is `/` on a board
 * and a folder of the agent's on the device model, laid out like sysfs with a
 * manager that is always `operating`. Zynq's manager takes the raw `.bin`
 * form; a Vivado `.bit` needs converting first (PYNQ does, kernelfarm does not).
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { SessionFile } from "../../common/session-file.ts";
import { FarmError } from "../../../protos/index.ts";
import { parseTvmVtaConfig, vtaHardware, type VtaHardware } from "../../../vta/index.ts";

export interface ProgrammedBitstream {
  sha256: string;
  /** The VTA configuration it implements. */
  hardware: string;
}

export class FpgaManager {
  private readonly manager: string;

  constructor(
    readonly root: string,
    readonly device = "fpga0",
  ) {
    this.manager = join(root, "sys/class/fpga_manager", device);
  }

  /** A sysfs-like folder for the device model: a manager that accepts every bitstream. */
  static forModel(root: string): FpgaManager {
    const m = new FpgaManager(root);
    mkdirSync(m.manager, { recursive: true });
    mkdirSync(join(root, "lib/firmware"), { recursive: true });
    for (const [file, text] of [
      ["flags", "0"],
      ["firmware", ""],
      ["state", "operating"],
    ]) {
      if (!existsSync(join(m.manager, file!))) writeFileSync(join(m.manager, file!), `${text}\n`);
    }
    return m;
  }

  /** Loads `bitstream` after checking its companion `config` (both read by the caller: a session's files, device-agent/agent/pool.ts). */
  program(bitstream: SessionFile, config: SessionFile, hw: VtaHardware): ProgrammedBitstream {
    const theirs = vtaHardware(parseTvmVtaConfig(config.bytes.toString("utf8"), config.name)).name;
    if (theirs !== hw.name) {
      throw new FarmError(
        "TARGET_MISMATCH",
        `the bitstream's VTA configuration is ${theirs} (${config.name}), but this board's agent runs ${hw.name}: modules compiled for one do not run on the other; program a ${hw.name} bitstream`,
      );
    }
    if (!existsSync(this.manager)) {
      throw new FarmError(
        "DEVICE_ERROR",
        `no FPGA manager at ${this.manager}: the board's kernel needs the FPGA manager framework (CONFIG_FPGA_MGR) and a driver for its FPGA`,
      );
    }
    const bytes = bitstream.bytes;
    if (bytes.byteLength === 0) throw new FarmError("INVALID_ARGUMENT", `${bitstream.name} is empty: no bitstream to load`);
    const sha256 = createHash("sha256").update(bytes).digest("hex");
    const firmware = `kfarm-${sha256.slice(0, 16)}.bin`;
    try {
      writeFileSync(join(this.root, "lib/firmware", firmware), bytes);
      writeFileSync(join(this.manager, "flags"), "0");
      writeFileSync(join(this.manager, "firmware"), firmware);
    } catch (err) {
      throw new FarmError("DEVICE_ERROR", `loading ${firmware} through ${this.manager} failed: ${(err as Error).message}`, { cause: err });
    }
    const state = readFileSync(join(this.manager, "state"), "utf8").trim();
    if (state !== "operating")
      throw new FarmError("DEVICE_ERROR", `the FPGA manager says "${state}" after loading ${firmware}, not "operating": the bitstream did not take`);
    return { sha256, hardware: theirs };
  }
}
