/**
 * Board declarations: `--board KIND[:INDEX][:k=v,...]` on the command line
 * (`cpu:key=cpu`, `cpu:key=cpu,name=c0,zone=a`, later `cuda:0:key=h100`), or
 * entries of a JSON/YAML agent config file, with the agent's own settings.
 */
import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import { FarmError } from "../protos/index.ts";
import { deviceCount, isBoardKind, BOARD_KINDS, type BoardKind } from "./backends/index.ts";
import type { AgentOptions } from "./options.ts";

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
const RESERVED = new Set(["key", "name", "memory", "canary"]);

export function parseBoardFlag(flag: string, position: number): BoardConfig {
  const [kind, ...rest] = flag.split(":");
  if (!kind || !isBoardKind(kind)) {
    throw new FarmError("INVALID_ARGUMENT", `--board ${JSON.stringify(flag)}: unknown board kind ${JSON.stringify(kind)}; known kinds: ${BOARD_KINDS.join(", ")}`);
  }
  const pairs: Record<string, string> = {};
  let index: string | undefined;
  for (const part of rest) {
    if (!part.includes("=")) {
      index = part;
      continue;
    }
    for (const kv of part.split(",")) {
      const eq = kv.indexOf("=");
      if (eq <= 0) throw new FarmError("INVALID_ARGUMENT", `--board ${JSON.stringify(flag)}: "${kv}" is not KEY=VALUE`);
      pairs[kv.slice(0, eq)] = kv.slice(eq + 1);
    }
  }
  const labels = Object.fromEntries(Object.entries(pairs).filter(([k]) => !RESERVED.has(k)));
  const options: Record<string, unknown> = {};
  if (pairs.memory !== undefined) options.memoryBytes = parseBytes(pairs.memory, flag);
  // CPU boards: the canary's shared object (device-agent/canary.ts builds the default).
  if (pairs.canary !== undefined) options.canaryLibrary = pairs.canary;
  return checkBoard({ kind, key: pairs.key ?? kind, name: pairs.name ?? `${kind}${index ?? (kind === "cuda" ? 0 : position)}`, labels, index, options }, flag);
}

/** Agent settings a config file may give, under `agent:` (the command line's flags win). */
export type AgentFileSettings = Pick<
  AgentOptions,
  "maxUploadBytes" | "maxSessionBytes" | "callTimeoutMs" | "warmWorkers" | "canaryIntervalMs" | "metricsPort" | "metricsHost"
  | "workerUids" | "workerNetwork" | "workerLimits" | "workerDiskBytes"
>;

const SIZE_SETTINGS = ["maxUploadBytes", "maxSessionBytes", "workerDiskBytes"] as const;
const COUNT_SETTINGS = ["callTimeoutMs", "warmWorkers", "canaryIntervalMs", "metricsPort"] as const;
/** Session workers' confinement (device-agent/sandbox.ts): the strings their flags take, checked when the agent resolves them. */
const SANDBOX_SETTINGS = ["workerUids", "workerNetwork", "workerLimits"] as const;

function readSettings(raw: unknown, at: string): AgentFileSettings {
  if (raw === undefined) return {};
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw new FarmError("INVALID_ARGUMENT", `${at} must be a mapping of settings`);
  const known = [...SIZE_SETTINGS, ...COUNT_SETTINGS, "metricsHost", ...SANDBOX_SETTINGS];
  const out: AgentFileSettings = {};
  for (const [k, v] of Object.entries(raw)) {
    if (!known.includes(k)) throw new FarmError("INVALID_ARGUMENT", `${at}.${k} is not a setting; known: ${known.join(", ")}`);
    if ((SIZE_SETTINGS as readonly string[]).includes(k)) {
      out[k as (typeof SIZE_SETTINGS)[number]] = parseBytes(String(v), `${at}.${k}`);
    } else if (k === "workerLimits" && typeof v === "object" && v !== null && !Array.isArray(v)) {
      // A mapping ({ nofile: 1024, fsize: 1g }) as well as the flag's "nofile=1024,fsize=1g"; checked where the agent resolves it.
      out.workerLimits = Object.entries(v).map(([name, value]) => `${name}=${String(value)}`).join(",");
    } else if ((SANDBOX_SETTINGS as readonly string[]).includes(k)) {
      if (typeof v !== "string" || v === "") throw new FarmError("INVALID_ARGUMENT", `${at}.${k} must be a string (as its --${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} flag takes), got ${JSON.stringify(v)}`);
      out[k as (typeof SANDBOX_SETTINGS)[number]] = v as never;
    } else if (k === "metricsHost") {
      if (typeof v !== "string" || v === "") throw new FarmError("INVALID_ARGUMENT", `${at}.metricsHost must be an interface address, got ${JSON.stringify(v)}`);
      out.metricsHost = v;
    } else {
      if (!Number.isSafeInteger(v) || (v as number) < 0) throw new FarmError("INVALID_ARGUMENT", `${at}.${k} must be a whole number ≥ 0, got ${JSON.stringify(v)}`);
      if (k === "metricsPort" && (v as number) > 65535) throw new FarmError("INVALID_ARGUMENT", `${at}.metricsPort must be a port (0–65535), got ${v}`);
      out[k as (typeof COUNT_SETTINGS)[number]] = v as number;
    }
  }
  return out;
}

/** Reads `{ tracker?, name?, boards: [{kind, key, name?, labels?, index?, options?}], agent?: {settings} }`. */
export function readAgentConfigFile(path: string): { tracker?: string; name?: string; boards: BoardConfig[]; settings: AgentFileSettings } {
  let doc: unknown;
  try {
    const text = readFileSync(path, "utf8");
    doc = path.endsWith(".json") ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    throw new FarmError("INVALID_ARGUMENT", `cannot read agent config ${path}: ${(err as Error).message}`, { cause: err });
  }
  const d = doc as { tracker?: unknown; name?: unknown; boards?: unknown; agent?: unknown };
  if (!Array.isArray(d?.boards)) throw new FarmError("INVALID_ARGUMENT", `agent config ${path}: "boards" must be a list`);
  const boards = d.boards.map((b: Record<string, unknown>, i: number) => {
    const at = `agent config ${path}: boards[${i}]`;
    if (typeof b?.kind !== "string" || !isBoardKind(b.kind)) throw new FarmError("INVALID_ARGUMENT", `${at}.kind must be one of ${BOARD_KINDS.join(", ")}`);
    return checkBoard(
      {
        kind: b.kind,
        key: typeof b.key === "string" ? b.key : b.kind,
        name: typeof b.name === "string" ? b.name : `${b.kind}${i}`,
        labels: Object.fromEntries(Object.entries((b.labels as Record<string, unknown>) ?? {}).map(([k, v]) => [k, String(v)])),
        index: b.index === undefined ? undefined : String(b.index),
        options: (b.options as Record<string, unknown>) ?? {},
      },
      at,
    );
  });
  return {
    tracker: typeof d.tracker === "string" ? d.tracker : undefined,
    name: typeof d.name === "string" ? d.name : undefined,
    boards,
    settings: readSettings(d.agent, `agent config ${path}: agent`),
  };
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

function checkBoard(b: BoardConfig, where: string): BoardConfig {
  if (b.kind === "cuda" && b.index !== "all") {
    const index = b.index ?? "0";
    if (!/^\d+$/.test(index)) throw new FarmError("INVALID_ARGUMENT", `${where}: CUDA device ${JSON.stringify(index)} must be a device number (0, 1, ...) or "all"`);
    b = { ...b, index, options: { ...b.options, device: Number(index) } };
  }
  if (!/^[A-Za-z0-9_.:-]+$/.test(b.key)) throw new FarmError("INVALID_ARGUMENT", `${where}: key ${JSON.stringify(b.key)} may hold only letters, digits and _ . : -`);
  if (!/^[A-Za-z0-9_.-]+$/.test(b.name)) throw new FarmError("INVALID_ARGUMENT", `${where}: name ${JSON.stringify(b.name)} may hold only letters, digits and _ . -`);
  return b;
}

const UNITS: Record<string, number> = { "": 1, k: 1 << 10, m: 1 << 20, g: 1 << 30, t: 2 ** 40 };

/** "512m", "4g", "1048576" → bytes. */
export function parseBytes(text: string, where: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?$/i.exec(text.trim());
  if (!m) throw new FarmError("INVALID_ARGUMENT", `${where}: ${JSON.stringify(text)} is not a size (examples: 1048576, 512m, 4g)`);
  return Math.floor(Number(m[1]) * UNITS[m[2]!.toLowerCase()]!);
}
