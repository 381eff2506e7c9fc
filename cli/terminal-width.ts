/**
 * How wide `kfarm status` may print its table: a terminal wraps or cuts
 * longer lines, and a health reason can be hundreds of characters.
 */

/** The width when stdout is not a terminal (a pipe, a file) and COLUMNS is not set. */
export const PIPE_WIDTH = 100;

/** --width, else $COLUMNS, else the terminal's width, else PIPE_WIDTH; 0: no limit. */
export function outputWidth(
  flag: number | undefined,
  env: NodeJS.ProcessEnv = process.env,
  stdout: { isTTY?: boolean; columns?: number } = process.stdout,
): number {
  if (flag !== undefined) return flag;
  const columns = Number(env.COLUMNS);
  if (env.COLUMNS && Number.isInteger(columns) && columns > 0) return columns;
  return stdout.isTTY && stdout.columns ? stdout.columns : PIPE_WIDTH;
}
