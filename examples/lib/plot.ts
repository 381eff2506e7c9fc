/**
 * A best-so-far plot for tuning examples, as a standalone SVG (no
 * dependencies, opens in any browser): one line per series, x = candidates
 * measured, y = the best value seen so far.
 */
import { writeFileSync } from "node:fs";

export interface PlotSeries {
  label: string;
  /** The metric of each candidate in measurement order; NaN for failed ones. */
  values: number[];
  /** Where each value sits on the x axis (seconds since the start, say); default its index. */
  x?: number[];
}

export interface PlotOptions {
  title: string;
  yLabel: string;
  /** true: best = max (GFLOP/s); false: best = min (cycles, seconds). */
  higherIsBetter: boolean;
  /** The x axis' label; default "candidates measured (N)". */
  xLabel?: string;
  /** Horizontal lines to compare with (a vendor library's figure), drawn dashed. */
  references?: { label: string; value: number }[];
}

/** The running best of `values`, skipping NaN (before any success: NaN). */
export function bestSoFar(values: readonly number[], higherIsBetter: boolean): number[] {
  let best = NaN;
  return values.map((v) => {
    if (!Number.isNaN(v) && (Number.isNaN(best) || (higherIsBetter ? v > best : v < best))) best = v;
    return best;
  });
}

const COLORS = ["#2563eb", "#ea580c", "#16a34a", "#9333ea"];

export function writeBestSoFarSvg(path: string, series: readonly PlotSeries[], opts: PlotOptions): void {
  const W = 720;
  const H = 420;
  const m = { left: 70, right: 20, top: 40, bottom: 50 };
  const curves = series.map((s) => bestSoFar(s.values, opts.higherIsBetter));
  const n = Math.max(1, ...curves.map((c) => c.length));
  const xs = series.map((s, k) => s.x ?? curves[k]!.map((_, i) => i));
  const xMax = Math.max(1e-9, ...xs.flat().filter((v) => Number.isFinite(v)));
  const references = opts.references ?? [];
  const finite = [...curves.flat(), ...references.map((r) => r.value)].filter((v) => Number.isFinite(v));
  const lo = Math.min(0, ...finite);
  const hi = Math.max(1e-9, ...finite) * 1.05;
  const x = (v: number) => m.left + ((W - m.left - m.right) * v) / (opts.xLabel || series.some((s) => s.x) ? xMax : Math.max(1, n - 1));
  const y = (v: number) => H - m.bottom - ((H - m.top - m.bottom) * (v - lo)) / (hi - lo);
  const ticks = Array.from({ length: 6 }, (_, k) => lo + ((hi - lo) * k) / 5);
  const fmt = (v: number) => (Math.abs(v) >= 1e6 ? v.toExponential(2) : Math.abs(v) >= 1000 ? Math.round(v).toLocaleString("en-US") : v.toPrecision(3));
  const lines = curves.map((c, k) => {
    const pts = c.map((v, i) => (Number.isFinite(v) ? `${x(xs[k]![i]!).toFixed(1)},${y(v).toFixed(1)}` : "")).filter(Boolean);
    return `<polyline fill="none" stroke="${COLORS[k % COLORS.length]}" stroke-width="2" points="${pts.join(" ")}"/>`;
  });
  const refLines = references.map(
    (r, k) =>
      `<line x1="${m.left}" x2="${W - m.right}" y1="${y(r.value).toFixed(1)}" y2="${y(r.value).toFixed(1)}" stroke="#6b7280" stroke-dasharray="6 4"/><text x="${W - m.right - 4}" y="${(y(r.value) - 4 - 14 * k).toFixed(1)}" text-anchor="end" fill="#374151" font-size="12">${escape(r.label)}: ${fmt(r.value)}</text>`,
  );
  const legend = series.map(
    (s, k) =>
      `<text x="${m.left + 10}" y="${m.top + 16 + 16 * k}" fill="${COLORS[k % COLORS.length]}" font-size="13">${escape(s.label)}: ${fmt(curves[k]!.at(-1) ?? NaN)}</text>`,
  );
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif">
<rect width="${W}" height="${H}" fill="white"/>
<text x="${W / 2}" y="24" text-anchor="middle" font-size="15">${escape(opts.title)}</text>
${ticks.map((t) => `<line x1="${m.left}" x2="${W - m.right}" y1="${y(t)}" y2="${y(t)}" stroke="#e5e7eb"/><text x="${m.left - 8}" y="${y(t) + 4}" text-anchor="end" font-size="11">${fmt(t)}</text>`).join("\n")}
<line x1="${m.left}" x2="${m.left}" y1="${m.top}" y2="${H - m.bottom}" stroke="#374151"/>
<line x1="${m.left}" x2="${W - m.right}" y1="${H - m.bottom}" y2="${H - m.bottom}" stroke="#374151"/>
<text x="${(W + m.left) / 2}" y="${H - 12}" text-anchor="middle" font-size="12">${escape(opts.xLabel ?? `candidates measured (${n})`)}</text>
${xTicks(x, opts.xLabel || series.some((s) => s.x) ? xMax : n - 1, H - m.bottom)}
<text x="16" y="${(H - m.bottom + m.top) / 2}" text-anchor="middle" font-size="12" transform="rotate(-90 16 ${(H - m.bottom + m.top) / 2})">${escape(opts.yLabel)} (best so far)</text>
${refLines.join("\n")}
${lines.join("\n")}
${legend.join("\n")}
</svg>
`;
  writeFileSync(path, svg);
}

/** Five ticks along the x axis, at round-ish values. */
function xTicks(x: (v: number) => number, max: number, y0: number): string {
  if (!(max > 0)) return "";
  return Array.from({ length: 6 }, (_, k) => (max * k) / 5)
    .map((v) => `<text x="${x(v).toFixed(1)}" y="${y0 + 16}" text-anchor="middle" font-size="11">${v >= 100 ? v.toFixed(0) : v.toPrecision(2)}</text>`)
    .join("");
}

function escape(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}
