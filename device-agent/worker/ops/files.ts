/** The session's files: upload (chunked, or a probe of the agent's store), download, listdir, remove. */
import { FarmError } from "../../../protos/index.ts";
import type { SessionFiles } from "../files.ts";
import type { SessionState } from "../session-state.ts";
import type { Assembly, Body, Handler, Multiplexer } from "./operation.ts";

/** What the store names an upload's bytes by: their sha256, or `tree-` and their tree digest; "" for none. */
function digestOf(u: Body<"upload">): string {
  if (u.sha256 && u.tree_sha256) throw new FarmError("PROTOCOL_ERROR", "an upload names its bytes by sha256 or by tree_sha256, not both");
  return u.sha256 || (u.tree_sha256 ? `tree-${u.tree_sha256}` : "");
}

const UPLOAD: Assembly<Body<"upload">, ReturnType<SessionFiles["begin"]>> = {
  what: "an upload",
  begin: (s, u) => s.files.begin(u.name, u.total_bytes, digestOf(u) || undefined),
  add: (s, upload, u) => {
    // A digest may also come on the last frame: the host hashed while it sent (host-sdk/dedupe-plan.ts).
    const digest = digestOf(u);
    if (digest && u.done && !upload.sha256) s.files.name(upload, digest);
    return u.data.byteLength > 0 ? s.files.append(upload, u.data) : undefined;
  },
  // With a digest, the agent is asked to keep the file; a later take of it waits for that.
  finish: async (s, upload, id, mux) => {
    await s.files.finish(upload);
    mux.reply({ id, ok: {} });
  },
  abandon: (s, upload) => s.files.abandon(upload),
};

/** A probe counts only as a request's first frame; later frames under its id are the upload's data. */
export const upload: Handler<"upload"> = (s, id, u, mux) => (u.probe && !mux.assembling(id) ? probe(s, id, u, mux) : mux.assemble(id, u, UPLOAD));

/** An upload probe: the file from the agent's store, or NOT_FOUND (the host then sends the bytes). */
function probe(s: SessionState, id: number, u: Body<"upload">, mux: Multiplexer): Promise<void> {
  const digest = digestOf(u);
  if (!digest || u.data.byteLength > 0 || !u.done)
    throw new FarmError("PROTOCOL_ERROR", `upload probe ${id} must carry a sha256 or tree_sha256, no data, and be its request's only frame`);
  return adopt(s, id, u, digest, mux);
}

async function adopt(s: SessionState, id: number, u: Body<"upload">, digest: string, mux: Multiplexer): Promise<void> {
  if (!(await s.files.adopt(u.name, digest, u.total_bytes)))
    throw new FarmError("NOT_FOUND", `this board holds no ${u.total_bytes} bytes of digest ${digest}; send them`);
  s.reused.files++;
  s.reused.bytes += u.total_bytes;
  mux.reply({ id, ok: {} });
}

export const download: Handler<"download"> = (s, id, d, mux) => mux.sendChunks(id, s.files.openRead(d.name));

export const listdir: Handler<"listdir"> = (s, id, _, mux) => {
  mux.reply({ id, listing: { entries: s.files.list() } });
};

export const remove: Handler<"remove"> = (s, id, r, mux) => {
  s.files.remove(r.name);
  mux.reply({ id, ok: {} });
};
