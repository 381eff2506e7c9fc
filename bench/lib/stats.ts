/**
 * Percentiles, units and the table every benchmark prints.
 */

export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = (p / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (rank - lo);
}

export function median(samples: readonly number[]): number {
  return percentile(samples, 50);
}

/** Milliseconds since an arbitrary origin, sub-microsecond resolution. */
export function nowMs(): number {
  return performance.now();
}

/** MB/s with MB = 10^6 bytes, as the TVM reference counts them. */
export function mbps(bytes: number, ms: number): number {
  return bytes / 1e6 / (ms / 1e3);
}

export function fmtMs(ms: number): string {
  if (!Number.isFinite(ms)) return "n/a";
  if (ms < 1) return `${(ms * 1000).toFixed(1)} µs`;
  if (ms < 100) return `${ms.toFixed(2)} ms`;
  return `${ms.toFixed(0)} ms`;
}

export function fmtUs(ms: number): string {
  return `${(ms * 1000).toFixed(1)} µs`;
}

export function fmtMBps(v: number): string {
  return Number.isFinite(v) ? `${v.toFixed(0)} MB/s` : "n/a";
}

export function fmtMiB(bytes: number): string {
  return `${(bytes / (1 << 20)).toFixed(1)} MiB`;
}

export function fmtRatio(r: number): string {
  if (!Number.isFinite(r)) return "n/a";
  return r >= 10 ? `${r.toFixed(0)}×` : `${r.toFixed(2)}×`;
}

/** One line of a benchmark's table. */
export interface Row {
  figure: string;
  value: string;
  target: string;
  /** "met" / "MISSED" / "" when the figure has no target. */
  verdict: string;
  baseline: string;
  ratio: string;
}

export function verdict(ok: boolean | undefined): string {
  return ok === undefined ? "" : ok ? "met" : "MISSED";
}

export function printTable(title: string, rows: readonly Row[], notes: readonly string[] = []): void {
  const headers = ["figure", "measured", "target", "", "baseline (same run)", "ratio"];
  const cells = rows.map((r) => [r.figure, r.value, r.target, r.verdict, r.baseline, r.ratio]);
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) =>
    c
      .map((x, i) => x.padEnd(widths[i]!))
      .join("  ")
      .trimEnd();
  const rule = "-".repeat(widths.reduce((a, w) => a + w + 2, -2));
  console.log(`\n${title}`);
  console.log(rule);
  console.log(line(headers));
  console.log(rule);
  for (const c of cells) console.log(line(c));
  console.log(rule);
  for (const n of notes) console.log(`  ${n}`);
}
