/** The session's files: upload (chunked, or a probe of the agent's store), download, listdir, remove. */
import { FarmError } from "../../../protos/index.ts";
import type { SessionFiles } from "../files.ts";
import type { SessionState } from "../session-state.ts";
import type { Assembly, Body, Handler, Multiplexer } from "./operation.ts";

const UPLOAD: Assembly<Body<"upload">, ReturnType<SessionFiles["begin"]>> = {
  what: "an upload",
  begin: (s, u) => s.files.begin(u.name, u.total_bytes, u.sha256 || undefined),
  add: (s, upload, u, id, mux) => {
    if (upload.adopted) return undefined; // the host's bytes still in flight after the store gave the file
    // A digest after the first frame: the host hashed while sending. If the store has the file, answer now (the host stops sending).
    if (u.sha256 && !upload.sha256) return midway(s, upload, u, id, mux);
    return u.data.byteLength > 0 ? s.files.append(upload, u.data) : undefined;
  },
  // One the store gave was answered then.
  finish: (s, upload, id, mux) => {
    s.files.finish(upload);
    if (!upload.adopted) mux.reply({ id, ok: {} });
  },
  abandon: (s, upload) => s.files.abandon(upload),
};

/** A probe counts only as a request's first frame; later frames under its id are the upload's data. */
export const upload: Handler<"upload"> = (s, id, u, mux) => (u.probe && !mux.assembling(id) ? probe(s, id, u, mux) : mux.assemble(id, u, UPLOAD));

/** An upload probe: the file from the agent's store, or NOT_FOUND (the host then sends the bytes). */
function probe(s: SessionState, id: number, u: Body<"upload">, mux: Multiplexer): Promise<void> {
  if (!u.sha256 || u.data.byteLength > 0 || !u.done) throw new FarmError("PROTOCOL_ERROR", `upload probe ${id} must carry a sha256, no data, and be its request's only frame`);
  return adopt(s, id, u, mux);
}

async function midway(s: SessionState, upload: ReturnType<SessionFiles["begin"]>, u: Body<"upload">, id: number, mux: Multiplexer): Promise<void> {
  if (await s.files.adoptMidway(upload, u.sha256, u.total_bytes)) {
    s.reused.files++;
    s.reused.bytes += u.total_bytes;
    mux.reply({ id, ok: {} });
  } else if (u.data.byteLength > 0) {
    await s.files.append(upload, u.data);
  }
}

async function adopt(s: SessionState, id: number, u: Body<"upload">, mux: Multiplexer): Promise<void> {
  if (!(await s.files.adopt(u.name, u.sha256, u.total_bytes))) throw new FarmError("NOT_FOUND", `this board holds no ${u.total_bytes} bytes of sha256 ${u.sha256}; send them`);
  s.reused.files++;
  s.reused.bytes += u.total_bytes;
  mux.reply({ id, ok: {} });
}

export const download: Handler<"download"> = (s, id, d, mux) => mux.sendChunks(id, s.files.read(d.name));

export const listdir: Handler<"listdir"> = (s, id, _, mux) => {
  mux.reply({ id, listing: { entries: s.files.list() } });
};

export const remove: Handler<"remove"> = (s, id, r, mux) => {
  s.files.remove(r.name);
  mux.reply({ id, ok: {} });
};
