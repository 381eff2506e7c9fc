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

let root: Logger | undefined;

export function rootLogger(): Logger {
  root ??= pino({ level: process.env.KFARM_LOG ?? "info", base: { pid: process.pid } }, pino.destination(2));
  return root;
}

export function componentLogger(component: string, fields: Record<string, unknown> = {}): Logger {
  return rootLogger().child({ component, ...fields });
}
