/**
 * Every operation of a HostFrame (session.proto's `oneof op`) and its
 * handler: the multiplexer (../session-server.ts) dispatches through this
 * table alone, so a new operation is a proto field, a handler and a row here.
 */
import { arrayAlloc, arrayFill, arrayFree, arrayRead, arrayWrite } from "./arrays.ts";
import { call, loadModule } from "./calls.ts";
import { download, listdir, remove, upload } from "./files.ts";
import { programFpga } from "./fpga.ts";
import { measure } from "./measure.ts";
import { output } from "./output.ts";
import type { Op, Operation } from "./operation.ts";
import { clearStats, stats } from "./stats.ts";
import { timeEvaluate } from "./timing.ts";

export type { Assembly, Chunk, Multiplexer, Op, Operation } from "./operation.ts";

export const OPERATIONS: { readonly [K in Op]: Operation<K> } = {
  upload: { handle: upload },
  download: { handle: download },
  listdir: { handle: listdir },
  remove: { handle: remove },
  load_module: { handle: loadModule, runsTenantCode: true },
  array_alloc: { handle: arrayAlloc },
  array_write: { handle: arrayWrite },
  array_fill: { handle: arrayFill },
  array_read: { handle: arrayRead },
  array_free: { handle: arrayFree },
  call: { handle: call, counts: "calls", runsTenantCode: true },
  time_evaluate: { handle: timeEvaluate, counts: "timeEvaluations", runsTenantCode: true },
  measure: { handle: measure, counts: "timeEvaluations", runsTenantCode: true },
  stats: { handle: stats },
  clear_stats: { handle: clearStats },
  program_fpga: { handle: programFpga },
  output: { handle: output },
  // Closing is the multiplexer's own state: after it, every request is refused.
  close: { handle: (_s, id, _, mux) => mux.close(id) },
};
