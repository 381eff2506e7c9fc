/**
 * The Logger every part takes: structured fields plus a `component`.
 * pino behind it, JSON lines on stderr; level from KFARM_LOG (default "info"),
 * "silent" to switch off.
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
      const child = rootPino().child({ ...bound, ...fields });
      child[level](msg);
    } else p[level](fields, msg);
  };
  return {
    debug: at("debug"),
    info: at("info"),
    warn: at("warn"),
    error: at("error"),
    // From the root, whose own base (the pid) is not a binding: `bound` with `fields` over it.
    child: (fields) => wrap(Object.keys(fields).some((k) => k in bound) ? rootPino().child({ ...bound, ...fields }) : p.child(fields)),
  };
}

function rootPino(): Pino {
  root ??= pino({ level: process.env.KFARM_LOG ?? "info", base: { pid: process.pid } }, pino.destination(2));
  return root;
}

export function rootLogger(): Logger {
  return wrap(rootPino());
}

export function componentLogger(component: string, fields: Record<string, unknown> = {}): Logger {
  return rootLogger().child({ component, ...fields });
}
