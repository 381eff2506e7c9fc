/**
 * The Logger every part takes: structured fields plus a `component`.
 * pino behind it, JSON lines on stderr; level from KFARM_LOG (default "info";
 * an embedded farm's tracker and agent default to "warn", since their
 * process's output is for a person), "silent" to switch off. KFARM_LOG is
 * read when the first logger is made, not when this module loads: a script
 * may set it after its imports.
 */
import { pino } from "pino";

export interface Logger {
  debug(fields: Record<string, unknown>, msg: string): void;
  info(fields: Record<string, unknown>, msg: string): void;
  warn(fields: Record<string, unknown>, msg: string): void;
  error(fields: Record<string, unknown>, msg: string): void;
  child(fields: Record<string, unknown>): Logger;
}

type Pino = ReturnType<typeof pino>;
type Level = "debug" | "info" | "warn" | "error";
export type LogLevel = Level | "silent";

/** A server's level when KFARM_LOG names none. */
export const DEFAULT_LOG_LEVEL: LogLevel = "info";
/** The level of a farm embedded in a user's program (startLocalFarm) when KFARM_LOG names none: its stdout is the user's. */
export const EMBEDDED_LOG_LEVEL: LogLevel = "warn";

let root: Pino | undefined;

/**
 * pino writes a child's bindings and a call's fields as they come, so a key
 * bound twice (`component` of the tracker and of its TVM port, `agent` of
 * the agent and of a line about an agent) would appear twice in one JSON
 * line, which readers silently merge. Every line has unique keys: a child
 * or a call that names a bound key replaces its value.
 */
function wrap(p: Pino): Logger {
  const bound = p.bindings();
  const at = (level: Level) => (fields: Record<string, unknown>, msg: string) => {
    if (!p.isLevelEnabled(level)) return;
    if (Object.keys(fields).some((k) => k in bound)) {
      const child = rootPino().child({ ...bound, ...fields }, { level: p.level });
      child[level](msg);
    } else p[level](fields, msg);
  };
  return {
    debug: at("debug"),
    info: at("info"),
    warn: at("warn"),
    error: at("error"),
    // From the root, whose own base (the pid) is not a binding: `bound` with `fields` over it.
    child: (fields) => wrap(Object.keys(fields).some((k) => k in bound) ? rootPino().child({ ...bound, ...fields }, { level: p.level }) : p.child(fields)),
  };
}

function rootPino(): Pino {
  root ??= pino({ level: process.env.KFARM_LOG || DEFAULT_LOG_LEVEL, base: { pid: process.pid } }, pino.destination(2));
  return root;
}

export function rootLogger(): Logger {
  return wrap(rootPino());
}

export interface ComponentLoggerOptions {
  /** The level when KFARM_LOG names none (default DEFAULT_LOG_LEVEL): KFARM_LOG, when set, always wins. */
  defaultLevel?: LogLevel;
}

export function componentLogger(component: string, fields: Record<string, unknown> = {}, opts: ComponentLoggerOptions = {}): Logger {
  const p = rootPino();
  const level = process.env.KFARM_LOG || opts.defaultLevel;
  return wrap(level && level !== p.level ? p.child({ component, ...fields }, { level }) : p.child({ component, ...fields }));
}
