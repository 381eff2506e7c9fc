/**
 * The metric names a PromQL expression (as Grafana sends it) selects, for
 * checking a dashboard against what a farm exports. Not a PromQL parser: it
 * blanks what can hold names that are not metrics — string literals, label
 * matchers `{…}`, ranges and subqueries `[…]` (Grafana's `$__rate_interval`
 * among them), the label lists of `by`, `without`, `on`, `ignoring`,
 * `group_left`, `group_right`, `offset` durations and `@` times — then takes
 * every identifier that is not a function call (`rate(`, `sum (`), an
 * operator keyword or a number. Grafana's `label_values(METRIC, LABEL)`
 * names METRIC.
 */

const KEYWORDS = new Set(["by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset", "inf", "nan", "atan2"]);

export function metricNames(expr: string): string[] {
  const labelValues = /^\s*label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)/.exec(expr);
  if (labelValues) return [labelValues[1]!];
  const blanked = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, " ")
    .replace(/\{[^}]*\}/g, " ")
    .replace(/\[[^\]]*\]/g, " ")
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " ")
    .replace(/\boffset\s+-?[0-9a-z$_]+/gi, " ")
    .replace(/@\s*\S+/g, " ")
    .replace(/\$\{?\w+\}?/g, " ");
  const names = new Set<string>();
  for (const m of blanked.matchAll(/(?<![\w.])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)) {
    if (m[2] || KEYWORDS.has(m[1]!.toLowerCase())) continue;
    names.add(m[1]!);
  }
  return [...names];
}

/**
 * The series names an exposition text declares (`# TYPE` lines): a counter's
 * or gauge's own name; a histogram's `_bucket`, `_sum` and `_count`; a
 * summary's name, `_sum` and `_count`. Declared, not observed: a labelled
 * counter nothing has counted yet has no sample but is exported all the same.
 */
export function exportedSeries(exposition: string): Set<string> {
  const out = new Set<string>();
  for (const [, name, type] of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const suffixes = type === "histogram" ? ["_bucket", "_sum", "_count"] : type === "summary" ? ["", "_sum", "_count"] : [""];
    for (const s of suffixes) out.add(`${name}${s}`);
  }
  return out;
}
