/** The board's counters and conditions: stats, clear_stats. */
import type { Handler } from "./operation.ts";

export const stats: Handler<"stats"> = (s, id, _, mux) => {
  const board = s.backend.stats();
  const counters = { ...board.counters, uploads_reused: s.reused.files, upload_bytes_reused: s.reused.bytes };
  mux.reply({ id, stats: { counters, info: { ...board.info, ...s.hooks.info, worker_pid: String(process.pid) } } });
};

export const clearStats: Handler<"clear_stats"> = (s, id, _, mux) => {
  s.backend.clearStats();
  mux.reply({ id, ok: {} });
};
