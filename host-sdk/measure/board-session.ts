/**
 * One board's session for a measure() batch: what it has uploaded and the
 * arrays it keeps between candidates.
 */
import { CHUNK_BYTES, dtypeOf, toLaunchConfig, type AnyTypedArray } from "../../protos/index.ts";
import { cudaLaunchLimitsFromWire, cudaLaunchProblem, type CudaLaunchLimits } from "../../domain/index.ts";
import type { CompiledModule } from "../compiled-module.ts";
import type { KernelResources } from "../cuda/index.ts";
import type { Candidate, MeasureOptions, MeasureResult } from "./types.ts";
import type { RemoteArray, RemoteModule, Session, TimeEvaluatorOptions } from "../session.ts";

/** Awaits every promise (so none is left to reject unhandled) and throws the first failure. */
async function allOrFirstError<T>(promises: readonly Promise<T>[]): Promise<T[]> {
  const settled = await Promise.allSettled(promises);
  for (const s of settled) if (s.status === "rejected") throw s.reason;
  return settled.map((s) => (s as PromiseFulfilledResult<T>).value);
}

/**
 * One board's session for a whole batch: modules uploaded once, and arrays
 * kept between candidates (by dtype and shape) so that a candidate usually
 * costs one round trip — its inputs' copies and the Measure request are sent
 * together, and the board serves a session's frames in order. Outputs need
 * no reset: the board poisons them before every check.
 */
export class BoardSession {
  /** Modules uploaded and loaded (or on their way), by digest. */
  private readonly modules = new Map<string, Promise<RemoteModule>>();
  /** References too large to travel inline, held as arrays of the session (References memoises them, so one object is one reference). */
  private readonly heldReferences = new WeakMap<AnyTypedArray, Promise<RemoteArray>>();
  private readonly spare = new Map<string, RemoteArray[]>();

  /** The launch limits the board registered (a CUDA board), read once. */
  private readonly limits: CudaLaunchLimits | undefined;

  constructor(readonly session: Session) {
    this.limits = cudaLaunchLimitsFromWire(session.board.cuda_limits);
  }

  /**
   * Why candidate `c`, built as `module`, cannot launch on this board: its
   * kernel's resources as ptxas reported them (a CUDA module compiled on this
   * host) against the limits the board registered. Undefined when it can, or
   * when that cannot be told here (no launch, no report, a board that does not
   * say its limits): the board's own launch check then decides.
   */
  launchRefusal(module: CompiledModule, c: Candidate): string | undefined {
    const resources = (module as { resources?: Record<string, KernelResources> }).resources?.[c.function];
    if (!c.launch || !resources || !this.limits) return undefined;
    let launch;
    try {
      launch = toLaunchConfig(c.launch, `candidate ${c.id ?? ""}`);
    } catch {
      return undefined; // a malformed launch: the board names it
    }
    const problem = cudaLaunchProblem(c.function, resources, launch, this.limits);
    return (
      problem &&
      `${problem} (told on the host against board ${this.session.board.id}'s registered limits, with ptxas's report of the kernel; nothing was uploaded)`
    );
  }

  /**
   * Sends `module`'s upload and load now, unless already sent. Called with
   * the next candidate's module right after a Measure request went out, its
   * bytes travel while the board measures.
   */
  prefetch(module: CompiledModule): Promise<RemoteModule> {
    let loaded = this.modules.get(module.digest);
    if (!loaded) {
      loaded = allOrFirstError<unknown>([this.session.upload(module), this.session.loadModule(module.name)]).then((r) => r[1] as RemoteModule);
      // A failure is the result of the candidate that needs it (and a later one tries again).
      loaded.catch(() => this.modules.delete(module.digest));
      this.modules.set(module.digest, loaded);
    }
    return loaded;
  }

  /**
   * A reference over one chunk as an array of this session, copied once for
   * every candidate that shares it: the Measure request must fit in one
   * message, and a 4096² float32 output alone is 64 MiB. Undefined: it
   * travels inline.
   */
  private held(expect: AnyTypedArray): Promise<RemoteArray | undefined> {
    if (expect.byteLength <= CHUNK_BYTES) return Promise.resolve(undefined);
    let held = this.heldReferences.get(expect);
    if (!held) {
      held = this.session.array(expect);
      held.catch(() => this.heldReferences.delete(expect));
      this.heldReferences.set(expect, held);
    }
    return held;
  }

  /**
   * One candidate: its arguments, the Measure request, and — while `again`
   * flags the result — more timings of it, with the same module and arrays
   * (nothing uploaded or copied again) and without the checks: the answer
   * was checked before and after the first timing, on this board.
   */
  async run(
    module: CompiledModule,
    c: Candidate,
    expects: readonly (AnyTypedArray | undefined)[],
    opts: MeasureOptions,
    events?: MeasureEvents,
    again?: { times: number; when: (r: Measured) => boolean },
  ): Promise<Measured> {
    const s = this.session;
    const loading = this.prefetch(module);
    const taken: { key: string; array: RemoteArray }[] = [];
    const pending: Promise<unknown>[] = [];
    // A copy of more than one chunk may yield between chunks (back-pressure): then it must finish before the Measure request goes out.
    let copiesMustFinish = false;
    const args = c.args.map((a): RemoteArray | number | Promise<RemoteArray> => {
      if ("scalar" in a) return a.scalar;
      const dtype = "input" in a ? dtypeOf(a.input) : "random" in a ? a.dtype : a.output.dtype;
      const shape = "input" in a ? (a.shape ?? [a.input.length]) : "random" in a ? a.shape : a.output.shape;
      const key = `${dtype}[${shape.join(",")}]`;
      const reused = this.spare.get(key)?.pop();
      if (reused) {
        taken.push({ key, array: reused });
        if ("input" in a) {
          pending.push(reused.copyFrom(a.input));
          if (a.input.byteLength > CHUNK_BYTES) copiesMustFinish = true;
        } else if ("random" in a) {
          // Again at every candidate: the last one may have written into its inputs.
          pending.push(reused.fill(a.random));
        }
        return reused;
      }
      const made = "input" in a ? s.array(a.input, a.shape) : "random" in a ? s.array({ shape, dtype, random: a.random }) : s.array(a.output);
      pending.push(made.then((array) => taken.push({ key, array })));
      return made;
    });
    try {
      const ready = await allOrFirstError<RemoteArray | number>(args.map((a) => Promise.resolve(a)));
      if (copiesMustFinish) await allOrFirstError(pending);
      const remote = await loading;
      const checks = await Promise.all(
        expects.flatMap((expect, i) =>
          expect ? [this.held(expect).then((held) => ({ array: ready[i] as RemoteArray, expect: held ?? expect, atol: c.atol ?? 0, rtol: c.rtol ?? 0 }))] : [],
        ),
      );
      const timeOpts: TimeEvaluatorOptions = { number: 10, repeat: 3, ...opts.timeEvaluator, timeoutMs: opts.timeoutMs ?? 10_000, launch: c.launch };
      const measure = (withChecks: typeof checks) => {
        const measuring = s.measureCall(remote, c.function, ready, withChecks, timeOpts);
        events?.sent();
        measuring.then(
          () => events?.settled(true),
          () => events?.settled(false),
        );
        return measuring;
      };
      const measuring = measure(checks);
      const [m] = (await allOrFirstError<unknown>([measuring, ...pending])) as [Awaited<ReturnType<Session["measureCall"]>>];
      let r = measuredResult(m, s.board.id);
      if (!again || r.outcome !== "OK") return r;
      let measurements = 1;
      let flagged = again.when(r);
      while (flagged && measurements <= again.times) {
        r = measuredResult(await measure([]), s.board.id);
        measurements++;
        flagged = again.when(r);
      }
      return { ...r, ...(measurements > 1 ? { measurements } : {}), ...(flagged ? { flagged } : {}) };
    } finally {
      await Promise.allSettled(pending);
      for (const { key, array } of taken) {
        if (!this.spare.has(key)) this.spare.set(key, []);
        this.spare.get(key)!.push(array);
      }
    }
  }
}

/** A board's Measure requests going out and their answers coming back: when the board is busy. */
export interface MeasureEvents {
  sent(): void;
  /** `ok`: the board answered it; false: it failed (the session may be lost). */
  settled(ok: boolean): void;
}

/** What one Measure request gave a candidate: its result but for who it was and how many sessions it took. */
export type Measured = Omit<MeasureResult, "index" | "id" | "attempts">;

function measuredResult(m: Awaited<ReturnType<Session["measureCall"]>>, board: string): Measured {
  const t = m.time && {
    results: [...m.time.results],
    mean: m.time.mean,
    median: m.time.median,
    min: m.time.min,
    max: m.time.max,
    std: m.time.std,
    number: m.time.number,
    // The precision achieved (Infinity, with one repeat, is not JSON: left out), and why the timing stopped when a target was given.
    ...(Number.isFinite(m.time.rse) ? { rse: m.time.rse } : {}),
    ...(m.time.stoppedBy !== "repeat" ? { stoppedBy: m.time.stoppedBy } : {}),
  };
  if (m.wrong) return { outcome: "WRONG_ANSWER", message: m.wrong, board, ...(t ? { timing: t } : {}) };
  const throttled = m.time!.throttled;
  return { outcome: "OK", timing: t!, stats: m.counters, board, conditions: { ...m.time!.conditions }, ...(throttled !== undefined ? { throttled } : {}) };
}
