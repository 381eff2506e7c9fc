/** output: what this session's worker printed (its kernels' stdout and stderr), as its agent kept it for the session's host. */
import { FarmError } from "../../../protos/index.ts";
import type { Handler } from "./operation.ts";

export const output: Handler<"output"> = async (s, id, _, mux) => {
  if (!s.hooks.output) {
    throw new FarmError(
      "NOT_FOUND",
      "no output is kept for this session: its board runs in this process (a LocalSession), whose kernels print to this process's own stdout and stderr",
    );
  }
  return mux.sendChunks(id, await s.hooks.output());
};
