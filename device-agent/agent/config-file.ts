/**
 * The agent's config file (JSON or YAML): `{ tracker?, name?, boards: [...],
 * agent?: {settings} }`. Boards are checked as `--board` flags are
 * (board-config.ts); settings are the agent options a file may give. A field
 * the reader does not know is an error naming it and the ones it knows: a
 * misspelled `lables:` that were ignored would leave a board without its
 * labels and nobody told.
 */
import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import { FarmError } from "../../protos/index.ts";
import { BOARD_KINDS, isBoardKind } from "../backends/index.ts";
import { checkBoard, parseBytes, type BoardConfig } from "./board-config.ts";
import type { AgentOptions } from "./options.ts";

/** Agent settings a config file may give, under `agent:` (the command line's flags win). */
export type AgentFileSettings = Pick<
  AgentOptions,
  | "maxUploadBytes"
  | "maxSessionBytes"
  | "callTimeoutMs"
  | "warmWorkers"
  | "canaryIntervalMs"
  | "metricsPort"
  | "metricsHost"
  | "workerUids"
  | "workerNetwork"
  | "workerLimits"
  | "workerDiskBytes"
>;

const SIZE_SETTINGS = ["maxUploadBytes", "maxSessionBytes", "workerDiskBytes"] as const;
const COUNT_SETTINGS = ["callTimeoutMs", "warmWorkers", "canaryIntervalMs", "metricsPort"] as const;
/** Session workers' confinement (device-agent/agent/sandbox.ts): the strings their flags take, checked when the agent resolves them. */
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
      out.workerLimits = Object.entries(v)
        .map(([name, value]) => `${name}=${String(value)}`)
        .join(",");
    } else if ((SANDBOX_SETTINGS as readonly string[]).includes(k)) {
      if (typeof v !== "string" || v === "")
        throw new FarmError(
          "INVALID_ARGUMENT",
          `${at}.${k} must be a string (as its --${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} flag takes), got ${JSON.stringify(v)}`,
        );
      out[k as (typeof SANDBOX_SETTINGS)[number]] = v as never;
    } else if (k === "metricsHost") {
      if (typeof v !== "string" || v === "")
        throw new FarmError("INVALID_ARGUMENT", `${at}.metricsHost must be an interface address, got ${JSON.stringify(v)}`);
      out.metricsHost = v;
    } else {
      if (!Number.isSafeInteger(v) || (v as number) < 0)
        throw new FarmError("INVALID_ARGUMENT", `${at}.${k} must be a whole number ≥ 0, got ${JSON.stringify(v)}`);
      if (k === "metricsPort" && (v as number) > 65535) throw new FarmError("INVALID_ARGUMENT", `${at}.metricsPort must be a port (0–65535), got ${v}`);
      out[k as (typeof COUNT_SETTINGS)[number]] = v as number;
    }
  }
  return out;
}

/** The fields of the file, of a board in it, and of a board's options (the backends' settings, camelCase as in BoardConfig.options). */
const FILE_FIELDS = ["tracker", "name", "boards", "agent"] as const;
const BOARD_FIELDS = ["kind", "key", "name", "labels", "index", "options"] as const;
const BOARD_OPTIONS = ["memoryBytes", "canaryLibrary", "dma", "doneTimeoutMs", "hang", "tvmHome", "python"] as const;

/** Refuses a field of `obj` that `known` lacks, naming it and the ones allowed. */
function refuseUnknown(obj: object, known: readonly string[], at: string): void {
  const unknown = Object.keys(obj).find((k) => !known.includes(k));
  if (unknown !== undefined)
    throw new FarmError("INVALID_ARGUMENT", `${at}${unknown} is not a field here (misspelled?); the fields allowed: ${known.join(", ")}`, {
      details: { field: unknown },
    });
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
  if (typeof d !== "object" || d === null || Array.isArray(d))
    throw new FarmError("INVALID_ARGUMENT", `agent config ${path} must be a mapping with ${FILE_FIELDS.join(", ")}`);
  refuseUnknown(d, FILE_FIELDS, `agent config ${path}: `);
  if (!Array.isArray(d.boards)) throw new FarmError("INVALID_ARGUMENT", `agent config ${path}: "boards" must be a list`);
  const boards = d.boards.map((b: Record<string, unknown>, i: number) => {
    const at = `agent config ${path}: boards[${i}]`;
    if (typeof b !== "object" || b === null || Array.isArray(b))
      throw new FarmError("INVALID_ARGUMENT", `${at} must be a mapping with ${BOARD_FIELDS.join(", ")}`);
    refuseUnknown(b, BOARD_FIELDS, `${at}.`);
    if (b.options !== undefined) {
      if (typeof b.options !== "object" || b.options === null || Array.isArray(b.options))
        throw new FarmError("INVALID_ARGUMENT", `${at}.options must be a mapping of ${BOARD_OPTIONS.join(", ")}`);
      refuseUnknown(b.options, BOARD_OPTIONS, `${at}.options.`);
    }
    if (b.labels !== undefined && (typeof b.labels !== "object" || b.labels === null || Array.isArray(b.labels)))
      throw new FarmError("INVALID_ARGUMENT", `${at}.labels must be a mapping of label names to values, got ${JSON.stringify(b.labels)}`);
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
