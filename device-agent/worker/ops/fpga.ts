/** program_fpga: a bitstream and its companion JSON, uploaded to the session, loaded into a VTA board's FPGA by the agent. */
import { existsSync } from "node:fs";
import { FarmError } from "../../../protos/index.ts";
import type { Handler } from "./operation.ts";

export const programFpga: Handler<"program_fpga"> = async (s, id, { bitstream, config }, mux) => {
  if (!s.hooks.programFpga) {
    throw new FarmError(
      "BAD_ARGUMENTS",
      `programming an FPGA is an operation of vta boards (an FPGA board or its device model); this is a ${s.backend.kind} board`,
    );
  }
  for (const [what, name] of [
    ["bitstream", bitstream],
    ["companion JSON (TVM's vta_config.json)", config],
  ] as const) {
    if (!name) throw new FarmError("BAD_ARGUMENTS", `program_fpga needs the ${what}: the name of a file uploaded to this session`);
    if (!existsSync(s.files.path(name))) throw new FarmError("NOT_FOUND", `no file "${name}" in this session for the ${what}: upload it first`);
  }
  mux.reply({ id, programmed: await s.hooks.programFpga(bitstream, config) });
};
