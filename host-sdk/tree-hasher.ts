/**
 * The tree digest (domain/tree-digest.ts) of large uploads, hashed on worker
 * threads. WebCrypto's digest on the thread pool copies every leaf into fresh
 * memory and runs four at a time: 64 MiB took 50–60 ms on the 16-core GPU
 * host, as long as the transfer that dedupe saves. Here the bytes are copied
 * once into a shared buffer that stays allocated (warm pages) and each
 * thread hashes its share of the leaves with node's sha256.
 *
 * The threads start on first use and do not keep the process alive; the
 * buffer is dropped after a minute unused. Hashes run one at a time (they
 * share the buffer), each on every thread.
 */
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import { TREE_LEAF_BYTES, treeDigest, treeRoot } from "../domain/index.ts";

/** Below this, the thread pool's digest is as fast: no threads started. */
export const PARALLEL_TREE_MIN_BYTES = 8 << 20;
const THREADS = Math.max(2, Math.min(16, availableParallelism()));
const IDLE_MS = 60_000;

const SOURCE = `
const { parentPort } = require("node:worker_threads");
const { createHash } = require("node:crypto");
parentPort.on("message", ({ id, buffer, from, to }) => {
  const bytes = new Uint8Array(buffer, 0, to);
  const leaves = [];
  for (let at = from; at < to; at += ${TREE_LEAF_BYTES}) leaves.push(createHash("sha256").update(bytes.subarray(at, Math.min(at + ${TREE_LEAF_BYTES}, to))).digest());
  parentPort.postMessage({ id, leaves });
});
`;

let workers: Worker[] | undefined;
let shared: SharedArrayBuffer | undefined;
let idle: NodeJS.Timeout | undefined;
let queue: Promise<unknown> = Promise.resolve();
let nextId = 0;

function pool(): Worker[] {
  if (!workers) {
    workers = Array.from({ length: THREADS }, () => {
      const w = new Worker(SOURCE, { eval: true });
      w.unref();
      return w;
    });
  }
  return workers;
}

/** One thread's leaves [from, to) of the bytes in `buffer`. */
function leavesOf(w: Worker, buffer: SharedArrayBuffer, from: number, to: number): Promise<Uint8Array[]> {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    const done = (m: { id: number; leaves: Uint8Array[] }) => {
      if (m.id !== id) return;
      w.off("message", done);
      w.off("error", reject);
      resolve(m.leaves);
    };
    w.on("message", done);
    w.once("error", reject);
    w.postMessage({ id, buffer, from, to });
  });
}

async function parallel(bytes: Uint8Array): Promise<string> {
  if (!shared || shared.byteLength < bytes.byteLength) shared = new SharedArrayBuffer(bytes.byteLength);
  clearTimeout(idle);
  new Uint8Array(shared).set(bytes);
  const leaves = Math.ceil(bytes.byteLength / TREE_LEAF_BYTES);
  const threads = pool();
  const per = Math.ceil(leaves / threads.length);
  const parts = await Promise.all(
    threads.map((w, i) => {
      const from = Math.min(leaves, i * per) * TREE_LEAF_BYTES;
      const to = Math.min(bytes.byteLength, (i + 1) * per * TREE_LEAF_BYTES);
      return from < to ? leavesOf(w, shared!, from, to) : Promise.resolve([]);
    }),
  );
  idle = setTimeout(() => (shared = undefined), IDLE_MS).unref();
  return treeRoot(bytes.byteLength, parts.flat());
}

/** The tree digest of `bytes`: on worker threads for large inputs, else on the thread pool. */
export function hashTree(bytes: Uint8Array): Promise<string> {
  if (bytes.byteLength < PARALLEL_TREE_MIN_BYTES) return treeDigest(bytes);
  const run = queue.then(() => parallel(bytes));
  queue = run.catch(() => {});
  return run;
}
