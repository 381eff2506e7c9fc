/**
 * Board declarations: `--board KIND[:INDEX][:k=v,...]` on the command line
 * (`cpu:key=cpu`, `cpu:key=cpu,name=c0,zone=a`, later `cuda:0:key=h100`);
 * the entries of an agent config file are read by config-file.ts and checked
 * here the same way.
 */
import { FarmError } from "../../protos/index.ts";
import { deviceCount, isBoardKind, BOARD_KINDS, type BoardKind } from "../backends/index.ts";

export interface BoardConfig {
  kind: BoardKind;
  /** The key hosts request. */
  key: string;
  /** Unique within the agent; default kind + position. */
  name: string;
  labels: Record<string, string>;
  /** Device index for kinds with several devices. */
  index?: string;
  /** Backend settings (memoryBytes, ...). */
  options: Record<string, unknown>;
}

/** Keys of `k=v` pairs that configure the board rather than label it. */
const RESERVED = new Set(["key", "name", "memory", "canary", "dma", "done_timeout_ms", "hang", "tvm_home", "python"]);

/** What `--board` takes, shown with every refusal. */
export const BOARD_GRAMMAR =
  "KIND[:DEVICE][:KEY=VALUE,...], e.g. cpu:key=cpu,name=c0 · tvm:key=rasp4,tvm_home=/opt/tvm · vta-sim:key=vta · vta:pynq:key=vta · vta:model:key=vta · cuda:0:key=h100 · cuda:all:key=h100 " +
  "(DEVICE: CUDA, a number or all; VTA, model or a target: pynq, ultra96, zcu104)";
/** Kinds whose boards name a device: CUDA's numbered devices, VTA's target or its model. */
const INDEXED_KINDS: ReadonlySet<BoardKind> = new Set(["cuda", "vta"]);
/** What the options of VTA device boards may say. */
const VTA_DEVICES = ["model", "pynq", "ultra96", "zcu104"];

export function parseBoardFlag(flag: string, position: number): BoardConfig {
  const [kind, ...rest] = flag.split(":");
  const refuse: (problem: string) => never = (problem) => {
    throw new FarmError("INVALID_ARGUMENT", `--board ${JSON.stringify(flag)}: ${problem}; the form is ${BOARD_GRAMMAR}`, { details: { option: "board" } });
  };
  if (!kind || !isBoardKind(kind)) refuse(`unknown board kind ${JSON.stringify(kind ?? "")}; known kinds: ${BOARD_KINDS.join(", ")}`);
  const pairs: Record<string, string> = {};
  let index: string | undefined;
  rest.forEach((part, i) => {
    if (part === "") refuse("an empty part between colons");
    if (!part.includes("=")) {
      if (RESERVED.has(part)) refuse(`"${part}" needs a value (${part}=…)`);
      if (!INDEXED_KINDS.has(kind!)) refuse(`"${part}" is not KEY=VALUE (${kind} boards take no device number; to name one, give name=…)`);
      if (i !== 0 || Object.keys(pairs).length > 0) refuse(`the device "${part}" must come right after the kind`);
      index = part;
      return;
    }
    for (const kv of part.split(",")) {
      const eq = kv.indexOf("=");
      if (eq <= 0) refuse(`"${kv}" is not KEY=VALUE`);
      const k = kv.slice(0, eq);
      if (k in pairs) refuse(`${k} is given twice`);
      pairs[k] = kv.slice(eq + 1);
    }
  });
  const labels = Object.fromEntries(Object.entries(pairs).filter(([k]) => !RESERVED.has(k)));
  const options: Record<string, unknown> = {};
  if (pairs.memory !== undefined) options.memoryBytes = parseBytes(pairs.memory, flag);
  // CPU boards: the canary's shared object (device-agent/agent/canary.ts builds the default).
  if (pairs.canary !== undefined) options.canaryLibrary = pairs.canary;
  // VTA boards: the DMA allocator on hardware (auto, cma, or a u-dma-buf region's name), how long a run may take, and for the device model a hang to inject.
  if (pairs.dma !== undefined) options.dma = pairs.dma;
  if (pairs.done_timeout_ms !== undefined) {
    const ms = Number(pairs.done_timeout_ms);
    if (!Number.isInteger(ms) || ms <= 0) refuse(`done_timeout_ms=${pairs.done_timeout_ms} is not a positive number of milliseconds`);
    options.doneTimeoutMs = ms;
  }
  if (pairs.hang !== undefined) options.hang = pairs.hang;
  // tvm boards: where TVM's Python package and runtime are, and the interpreter (device-agent/backends/tvm/backend.ts).
  if (pairs.tvm_home !== undefined) options.tvmHome = pairs.tvm_home;
  if (pairs.python !== undefined) options.python = pairs.python;
  return checkBoard(
    {
      kind,
      key: pairs.key ?? kind,
      name: pairs.name ?? `${kind}${kind === "vta" ? position : (index ?? (kind === "cuda" ? 0 : position))}`,
      labels,
      index,
      options,
    },
    flag,
  );
}

/**
 * Boards with one entry per device: `cuda:all` becomes cuda0, cuda1, ... (or
 * NAME-0, NAME-1, ... when named), each with its device ordinal.
 */
export async function expandBoards(boards: readonly BoardConfig[]): Promise<BoardConfig[]> {
  const out: BoardConfig[] = [];
  for (const b of boards) {
    if (b.index !== "all") {
      out.push(b);
      continue;
    }
    const n = await deviceCount(b.kind);
    if (n === 0) throw new FarmError("INVALID_ARGUMENT", `board ${b.name}: "${b.kind}:all" but this host has no ${b.kind} device`);
    for (let i = 0; i < n; i++) {
      out.push({ ...b, name: b.name === `${b.kind}all` ? `${b.kind}${i}` : `${b.name}-${i}`, index: String(i), options: { ...b.options, device: i } });
    }
  }
  return out;
}

/** A declared board, checked: its device number, key and name. */
export function checkBoard(b: BoardConfig, where: string): BoardConfig {
  if (b.kind === "cuda" && b.index !== "all") {
    const index = b.index ?? "0";
    if (!/^\d+$/.test(index))
      throw new FarmError("INVALID_ARGUMENT", `${where}: CUDA device ${JSON.stringify(index)} must be a device number (0, 1, ...) or "all"`);
    b = { ...b, index, options: { ...b.options, device: Number(index) } };
  }
  if (b.kind === "vta") {
    const device = b.index ?? "model";
    if (!VTA_DEVICES.includes(device))
      throw new FarmError(
        "INVALID_ARGUMENT",
        `${where}: VTA device ${JSON.stringify(device)} is not known; give model (the register-level device model) or a target: ${VTA_DEVICES.slice(1).join(", ")}`,
      );
    if (b.options.hang !== undefined && device !== "model")
      throw new FarmError("INVALID_ARGUMENT", `${where}: hang= injects a fault into the device model; a ${device} board hangs on its own`);
    if (b.options.dma !== undefined && device === "model")
      throw new FarmError("INVALID_ARGUMENT", `${where}: dma= chooses a board's allocator; the device model has its own memory`);
    b = { ...b, index: device, options: { ...b.options, device } };
  } else {
    const tvmOnly = Object.entries({ tvmHome: "tvm_home", python: "python" })
      .filter(([k]) => b.kind !== "tvm" && b.options[k] !== undefined)
      .map(([, flag]) => flag);
    if (tvmOnly.length > 0)
      throw new FarmError(
        "INVALID_ARGUMENT",
        `${where}: ${tvmOnly.join(", ")} ${tvmOnly.length > 1 ? "are options" : "is an option"} of tvm boards, not ${b.kind}`,
      );
    const vtaOnly = Object.entries({ dma: "dma", doneTimeoutMs: "done_timeout_ms", hang: "hang" })
      .filter(([k]) => b.options[k] !== undefined)
      .map(([, flag]) => flag);
    if (vtaOnly.length > 0)
      throw new FarmError(
        "INVALID_ARGUMENT",
        `${where}: ${vtaOnly.join(", ")} ${vtaOnly.length > 1 ? "are options" : "is an option"} of vta boards, not ${b.kind}`,
      );
  }
  if (!/^[A-Za-z0-9_.:-]+$/.test(b.key))
    throw new FarmError("INVALID_ARGUMENT", `${where}: key ${JSON.stringify(b.key)} may hold only letters, digits and _ . : -`);
  if (!/^[A-Za-z0-9_.-]+$/.test(b.name))
    throw new FarmError("INVALID_ARGUMENT", `${where}: name ${JSON.stringify(b.name)} may hold only letters, digits and _ . -`);
  return b;
}

const UNITS: Record<string, number> = { "": 1, k: 1 << 10, m: 1 << 20, g: 1 << 30, t: 2 ** 40 };

/** "512m", "4g", "1048576" → bytes. */
export function parseBytes(text: string, where: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?$/i.exec(text.trim());
  if (!m) throw new FarmError("INVALID_ARGUMENT", `${where}: ${JSON.stringify(text)} is not a size (examples: 1048576, 512m, 4g)`);
  return Math.floor(Number(m[1]) * UNITS[m[2]!.toLowerCase()]!);
}
