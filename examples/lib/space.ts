/**
 * A knob space and the moves a search makes in it: a seeded generator, a
 * uniform draw, a mutation, a stable key, an index for sweeping the space in
 * a fixed order, a neighbourhood. Apart from search.ts so that the
 * cost model (cost-model.ts) and the searcher can share them without either
 * importing the other.
 */

/** Each knob's choices, in a meaningful order (a mutation prefers a neighbouring choice). */
export type KnobSpace = Readonly<Record<string, readonly (number | string)[]>>;

/** One value per knob. */
export type Config<S extends KnobSpace> = { -readonly [K in keyof S]: S[K][number] };

/** mulberry32: a small seeded generator of floats in [0, 1). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One of `items`, uniformly. @internal */
export function pick<T>(items: readonly T[], random: () => number): T {
  return items[Math.floor(random() * items.length)]!;
}

/** A configuration with every knob drawn uniformly. */
export function randomConfig<S extends KnobSpace>(space: S, random: () => number): Config<S> {
  const out: Record<string, number | string> = {};
  for (const k in space) out[k] = pick(space[k]!, random);
  return out as Config<S>;
}

/**
 * `config` with one knob changed (two, one time in three): to a neighbouring
 * choice two times in three, else to any other choice.
 */
export function mutate<S extends KnobSpace>(config: Config<S>, space: S, random: () => number): Config<S> {
  const out = { ...config } as Record<string, number | string>;
  const knobs = Object.keys(space).filter((k) => space[k]!.length > 1);
  const changes = random() < 1 / 3 ? 2 : 1;
  for (let c = 0; c < changes && knobs.length > 0; c++) {
    const k = knobs.splice(Math.floor(random() * knobs.length), 1)[0]!;
    const choices = space[k]!;
    const at = choices.indexOf(out[k]!);
    if (at >= 0 && random() < 2 / 3) {
      const step = at === 0 ? 1 : at === choices.length - 1 ? -1 : random() < 0.5 ? -1 : 1;
      out[k] = choices[at + step]!;
    } else {
      out[k] = pick(
        choices.filter((v) => v !== out[k]),
        random,
      );
    }
  }
  return out as Config<S>;
}

/** A stable, readable id: `knob=value` joined by commas, in the config's own key order. */
export function configKey(config: Readonly<Record<string, number | string>>): string {
  return Object.entries(config)
    .map(([k, v]) => `${k}=${v}`)
    .join(",");
}

/** The number of configurations in the space. */
export function spaceSize(space: KnobSpace): number {
  return Object.values(space).reduce((n, choices) => n * choices.length, 1);
}

/**
 * The configuration at `index` of the space read as a mixed-radix number (the
 * last knob varies fastest): with it a searcher can visit every configuration
 * once, to find the last few a uniform draw keeps missing.
 */
export function configAt<S extends KnobSpace>(space: S, index: number): Config<S> {
  const entries = Object.entries(space);
  const out: Record<string, number | string> = {};
  for (let i = entries.length - 1; i >= 0; i--) {
    const [k, choices] = entries[i]!;
    out[k] = choices[index % choices.length]!;
    index = Math.floor(index / choices.length);
  }
  // In the space's knob order, so that configKey() of it is the searcher's key.
  return Object.fromEntries(entries.map(([k]) => [k, out[k]!])) as Config<S>;
}

/** Knobs whose values differ between `a` and `b`. */
export function knobDistance(a: Readonly<Record<string, unknown>>, b: Readonly<Record<string, unknown>>, knobs: readonly string[]): number {
  let d = 0;
  for (const k of knobs) if (a[k] !== b[k]) d++;
  return d;
}

/**
 * Every configuration one knob away from `config`, then those two knobs away
 * — all of them, or, when there are more than `maxPairs`, each kept with
 * probability maxPairs / their number (about maxPairs, no repeats).
 */
export function neighbours<S extends KnobSpace>(config: Config<S>, space: S, random: () => number, maxPairs = 1024): Config<S>[] {
  const knobs = Object.keys(space).filter((k) => space[k]!.length > 1);
  const cur = config as Record<string, number | string>;
  const out: Config<S>[] = [];
  for (const k of knobs) for (const v of space[k]!) if (v !== cur[k]) out.push({ ...config, [k]: v });
  let pairs = 0;
  for (let i = 0; i < knobs.length; i++) for (let j = i + 1; j < knobs.length; j++) pairs += (space[knobs[i]!]!.length - 1) * (space[knobs[j]!]!.length - 1);
  const keep = pairs <= maxPairs ? 1 : maxPairs / pairs;
  for (let i = 0; i < knobs.length; i++) {
    const a = knobs[i]!;
    for (let j = i + 1; j < knobs.length; j++) {
      const b = knobs[j]!;
      for (const va of space[a]!) {
        if (va === cur[a]) continue;
        for (const vb of space[b]!) if (vb !== cur[b] && (keep === 1 || random() < keep)) out.push({ ...config, [a]: va, [b]: vb });
      }
    }
  }
  return out;
}
