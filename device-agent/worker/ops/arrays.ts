/** The session's arrays on the board: alloc, write (chunked), fill, read, free. */
import { DTYPES, FarmError, dtypeBytes, elementCount, isDtype } from "../../../protos/index.ts";
import { fillProblem } from "../../../domain/index.ts";
import { seededBytes } from "../fills.ts";
import type { RemoteArray, SessionState } from "../session-state.ts";
import type { Assembly, Body, Handler } from "./operation.ts";

/** The session's array `id`, or NOT_FOUND. */
export function arrayOf(s: SessionState, id: number): RemoteArray {
  const a = s.arrays.get(id);
  if (!a) throw new FarmError("NOT_FOUND", `no array ${id} in this session (freed, or never allocated)`);
  return a;
}

export const arrayAlloc: Handler<"array_alloc"> = (s, id, { shape, dtype }, mux) => {
  if (!isDtype(dtype)) throw new FarmError("BAD_ARGUMENTS", `unknown dtype ${JSON.stringify(dtype)}; known: ${Object.keys(DTYPES).join(", ")}`);
  if (shape.some((d) => !Number.isInteger(d) || d < 0)) throw new FarmError("BAD_ARGUMENTS", `shape ${JSON.stringify(shape)} must be non-negative integers`);
  const nbytes = elementCount(shape) * dtypeBytes(dtype);
  const { memoryBytes } = s.backend;
  if (s.arrayBytes + nbytes > memoryBytes) {
    throw new FarmError(
      "OUT_OF_MEMORY",
      `array [${shape.join(", ")}] ${dtype} needs ${nbytes} bytes; this board has ${memoryBytes - s.arrayBytes} of its ${memoryBytes} bytes left for this session`,
    );
  }
  const array = s.backend.alloc(nbytes);
  s.arrayBytes += nbytes;
  const arrayId = s.nextArray++;
  s.arrays.set(arrayId, { array, dtype, shape: [...shape] });
  mux.reply({ id, array: { array: arrayId, nbytes } });
};

/** Each frame names its array and offset: the frames are written where they say, nothing is held between them. */
const WRITE: Assembly<Body<"array_write">, void> = {
  what: "an array write",
  begin: () => {},
  add: (s, _, w) => {
    const a = arrayOf(s, w.array).array;
    if (w.offset < 0 || w.offset + w.data.byteLength > a.nbytes) {
      throw new FarmError("BAD_ARGUMENTS", `write of ${w.data.byteLength} bytes at offset ${w.offset} overruns array ${w.array} (${a.nbytes} bytes)`);
    }
    a.write(w.offset, w.data);
  },
  finish: (_s, _, id, mux) => {
    mux.reply({ id, ok: {} });
  },
};

export const arrayWrite: Handler<"array_write"> = (_s, id, w, mux) => mux.assemble(id, w, WRITE);

export const arrayFill: Handler<"array_fill"> = (s, id, fill, mux) => {
  const a = arrayOf(s, fill.array);
  const spec = { seed: fill.seed, low: fill.low, high: fill.high, integers: fill.integers };
  const problem = fillProblem(a.dtype, spec);
  if (problem) throw new FarmError("BAD_ARGUMENTS", `fill of array ${fill.array} (${a.dtype}): ${problem}`);
  a.array.write(0, seededBytes(a.dtype, a.array.nbytes / dtypeBytes(a.dtype), spec));
  mux.reply({ id, ok: {} });
};

export const arrayRead: Handler<"array_read"> = (s, id, r, mux) => {
  const { array } = arrayOf(s, r.array);
  return mux.sendChunks(id, array.read(0, array.nbytes));
};

export const arrayFree: Handler<"array_free"> = (s, id, f, mux) => {
  const { array } = arrayOf(s, f.array);
  array.free();
  s.arrays.delete(f.array);
  s.arrayBytes -= array.nbytes;
  mux.reply({ id, ok: {} });
};
