/**
 * Reading Prometheus text exposition in tests and benchmarks: a scrape parsed
 * into samples, looked up by name and labels.
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses exposition format 0.0.4 (`# HELP`/`# TYPE` lines skipped; no timestamps expected). */
export function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) throw new Error(`not an exposition line: ${JSON.stringify(line)}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[l[1]!] = l[2]!.replace(/\\n/g, "\n").replace(/\\"/g, '"').replace(/\\\\/g, "\\");
    }
    const raw = m[3]!;
    const value = raw === "+Inf" ? Infinity : raw === "-Inf" ? -Infinity : Number(raw);
    samples.push({ name: m[1]!, labels, value });
  }
  return samples;
}

/** The metric families an exposition declares (`# TYPE NAME TYPE`), name → type, in order. */
export function parseFamilies(text: string): Map<string, string> {
  const families = new Map<string, string>();
  for (const m of text.matchAll(/^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (\w+)$/gm)) families.set(m[1]!, m[2]!);
  return families;
}

export class Scrape {
  constructor(
    readonly samples: Sample[],
    readonly contentType: string,
    readonly bytes: number,
    /** Family name → type, from the `# TYPE` lines (a family with no sample yet is here too). */
    readonly families: ReadonlyMap<string, string> = new Map(),
  ) {}

  /** Samples of `name` whose labels include `labels`. */
  all(name: string, labels: Record<string, string> = {}): Sample[] {
    return this.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  }

  /** The one sample of `name` with exactly these labels (plus none other), or undefined. */
  get(name: string, labels: Record<string, string> = {}): number | undefined {
    const want = Object.keys(labels).length;
    return this.all(name, labels).find((s) => Object.keys(s.labels).length === want)?.value;
  }

  /** Sum over samples of `name` whose labels include `labels` (0 when none). */
  sum(name: string, labels: Record<string, string> = {}): number {
    return this.all(name, labels).reduce((a, s) => a + s.value, 0);
  }

  has(name: string): boolean {
    return this.samples.some((s) => s.name === name);
  }
}

/** GETs `http://address/metrics` and parses it; fails on any status but 200. */
export async function scrape(address: string, path = "/metrics"): Promise<Scrape> {
  const res = await fetch(`http://${address}${path}`);
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET ${path} on ${address}: HTTP ${res.status}: ${text.slice(0, 200)}`);
  return new Scrape(parseExposition(text), res.headers.get("content-type") ?? "", Buffer.byteLength(text), parseFamilies(text));
}
