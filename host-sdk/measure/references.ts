/** The expected outputs of measure()'s candidates, from their reference functions. */
import { FarmError, dtypeOf, elementCount, type AnyTypedArray } from "../../protos/index.ts";
import { fillRange, randomArray } from "../../domain/index.ts";
import type { Candidate, ReferenceFn } from "./types.ts";

/** Each reference function's outputs, per distinct inputs, computed once a batch. */
export class References {
  private readonly byFunction = new Map<ReferenceFn, Map<string, Promise<AnyTypedArray[]>>>();
  private readonly hostInputIds = new WeakMap<AnyTypedArray, number>();
  private hostInputs = 0;
  private readonly seeded = new Map<string, AnyTypedArray>();

  /** The expected contents per argument (undefined: not a checked output). */
  async expected(c: Candidate, id: string): Promise<(AnyTypedArray | undefined)[]> {
    if (!c.reference) return c.args.map((a) => ("output" in a ? a.expect : undefined));
    const inputs: AnyTypedArray[] = [];
    const keys: string[] = [];
    for (const a of c.args) {
      if ("input" in a) {
        let n = this.hostInputIds.get(a.input);
        if (n === undefined) this.hostInputIds.set(a.input, (n = this.hostInputs++));
        inputs.push(a.input);
        keys.push(`h${n}`);
      } else if ("random" in a) {
        const { low, high } = fillRange(a.dtype, a.random);
        const key = `r${a.dtype}[${a.shape.join(",")}]${a.random.seed}:${low}:${high}:${a.random.integers === true}`;
        let data = this.seeded.get(key);
        if (!data) this.seeded.set(key, (data = randomArray(a.dtype, elementCount(a.shape), a.random)));
        inputs.push(data);
        keys.push(key);
      }
    }
    let memo = this.byFunction.get(c.reference);
    if (!memo) this.byFunction.set(c.reference, (memo = new Map()));
    const key = keys.join("|");
    let outs = memo.get(key);
    if (!outs) memo.set(key, (outs = Promise.resolve().then(() => c.reference!(inputs))));
    let got: AnyTypedArray[];
    try {
      got = await outs;
    } catch (err) {
      throw new FarmError("INVALID_ARGUMENT", `measure: the reference function of candidate ${id} threw: ${(err as Error).message}`, { cause: err });
    }
    const outputs = c.args.flatMap((a) => ("output" in a ? [a.output] : []));
    if (!Array.isArray(got) || got.length !== outputs.length) {
      throw new FarmError(
        "INVALID_ARGUMENT",
        `measure: the reference function of candidate ${id} returned ${Array.isArray(got) ? got.length : typeof got} array(s) for ${outputs.length} output(s)`,
      );
    }
    outputs.forEach((o, k) => {
      const r = got[k]!;
      if (!ArrayBuffer.isView(r) || dtypeOf(r) !== o.dtype || r.length !== elementCount(o.shape)) {
        const what = ArrayBuffer.isView(r) ? `${r.length} ${dtypeOf(r)}` : typeof r;
        throw new FarmError(
          "INVALID_ARGUMENT",
          `measure: the reference function of candidate ${id} returned ${what} for output ${k}, which is ${elementCount(o.shape)} ${o.dtype}`,
        );
      }
    });
    let k = 0;
    return c.args.map((a) => ("output" in a ? got[k++] : undefined));
  }
}
