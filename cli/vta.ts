/** `kfarm vta …`: the VTA toolchain on the command line. */
import { readFile } from "node:fs/promises";
import { FarmError, decodeBundle } from "../protos/index.ts";
import { decodeVtaBinary, disassemble } from "../vta/index.ts";
import { compileVta, connectTracker, VTA_TUTORIALS, type ConnectOptions } from "../host-sdk/index.ts";

export const TUTORIAL_NAMES = Object.keys(VTA_TUTORIALS) as Array<keyof typeof VTA_TUTORIALS>;

/** The bundle bytes of a module file, or of a tutorial compiled on the spot. */
async function moduleBytes(file: string | undefined, tutorial: string | undefined): Promise<Uint8Array> {
  if (tutorial) {
    const spec = VTA_TUTORIALS[tutorial as keyof typeof VTA_TUTORIALS];
    if (!spec) throw new FarmError("INVALID_ARGUMENT", `no VTA tutorial "${tutorial}"; known: ${TUTORIAL_NAMES.join(", ")}`);
    return compileVta(spec).bytes;
  }
  if (!file) throw new FarmError("INVALID_ARGUMENT", "kfarm vta disasm needs a module file or --tutorial NAME");
  try {
    return await readFile(file);
  } catch (err) {
    throw new FarmError("NOT_FOUND", `cannot read module ${file}: ${(err as Error).message}`, { cause: err });
  }
}

export async function vtaDisasm(file: string | undefined, opts: { tutorial?: string; function?: string; uops?: boolean }): Promise<string> {
  const bundle = decodeBundle(await moduleBytes(file, opts.tutorial));
  if (bundle.target !== "vta") throw new FarmError("TARGET_MISMATCH", `${file ?? opts.tutorial} is a ${bundle.target} module, not a VTA module`);
  const binary = decodeVtaBinary(bundle.binary);
  const paramNames = Object.fromEntries(bundle.functions.map((f) => [f.name, f.params.filter((p) => p.kind === "buffer").map((p) => p.name)]));
  try {
    return disassemble(binary, { functionName: opts.function, paramNames, uops: opts.uops });
  } catch (err) {
    throw new FarmError("INVALID_ARGUMENT", (err as Error).message, { cause: err });
  }
}

/**
 * `kfarm vta program BOARD BITSTREAM`: a session on that board alone, in
 * which the bitstream and its companion JSON are uploaded and loaded
 * (Session.programFpga). Returns the line to print.
 */
export async function vtaProgram(
  boardId: string,
  bitstream: string,
  config: string | undefined,
  tracker: string | undefined,
  opts: ConnectOptions,
): Promise<string> {
  const client = await connectTracker(tracker, opts);
  try {
    const board = (await client.summary()).boards.find((b) => b.id === boardId);
    if (!board) throw new FarmError("NO_BOARD", `no board ${boardId} at ${client.address}; \`kfarm status --tracker ${client.address}\` lists them`);
    if (board.kind !== "vta")
      throw new FarmError("BAD_ARGUMENTS", `board ${boardId} is a ${board.kind} board; only vta boards (an FPGA board or its device model) take a bitstream`);
    const session = await client.request(board.key, { board: boardId });
    try {
      const r = await session.programFpga(bitstream, config);
      return `${boardId}: loaded ${bitstream} (VTA ${r.hardware}); label bitstream=${r.sha256}`;
    } finally {
      await session.close();
    }
  } finally {
    client.close();
  }
}
