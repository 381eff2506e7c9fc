/**
 * Whether a GPU timing was taken while the GPU was throttled, from what NVML
 * says: its clocks-event-reasons mask (nvmlDeviceGetCurrentClocksEventReasons,
 * formerly …ThrottleReasons; the bits are nvml.h's nvmlClocksEventReason*)
 * and its violation counters (nvmlDeviceGetViolationStatus: cumulative
 * nanoseconds the power or thermal limit held the clocks down).
 *
 * The board samples both before and after the timed runs; this module turns
 * the two samples into the `conditions` every result carries, and the host
 * reads `throttled` back with throttledOf(). Both ends share it so that a
 * result's flag means the same thing to the board that wrote it and the
 * tuner that acts on it. Pure: no NVML here (device-agent/backends/cuda/nvml.ts).
 */

/** One bit of nvml.h's clocks-event-reasons mask. */
export interface ClockEventReason {
  readonly bit: bigint;
  /** Lower-case words, as results show them. */
  readonly name: string;
  /**
   * True where the bit means the clocks were held below what the kernel would
   * otherwise get (power, heat, a hardware slowdown): a timing then measures
   * the limit, not the kernel. Idle and configured clocks (application or
   * display clock settings, a sync-boost group) are how the GPU was set up,
   * the same for every candidate, so they do not flag a result.
   */
  readonly throttling: boolean;
}

/** nvmlClocksEventReason* (nvml.h, R550 and later; the first nine since CUDA 9's nvmlClocksThrottleReason*). */
export const CLOCK_EVENT_REASONS: readonly ClockEventReason[] = [
  { bit: 0x1n, name: "gpu idle", throttling: false },
  { bit: 0x2n, name: "applications clocks setting", throttling: false },
  { bit: 0x4n, name: "sw power cap", throttling: true },
  { bit: 0x8n, name: "hw slowdown", throttling: true },
  { bit: 0x10n, name: "sync boost", throttling: false },
  { bit: 0x20n, name: "sw thermal slowdown", throttling: true },
  { bit: 0x40n, name: "hw thermal slowdown", throttling: true },
  { bit: 0x80n, name: "hw power brake slowdown", throttling: true },
  { bit: 0x100n, name: "display clock setting", throttling: false },
  { bit: 0x200n, name: "board limit", throttling: true },
  { bit: 0x400n, name: "reliability", throttling: true },
];

const KNOWN_BITS = CLOCK_EVENT_REASONS.reduce((all, r) => all | r.bit, 0n);
const THROTTLING_BITS = CLOCK_EVENT_REASONS.reduce((all, r) => (r.throttling ? all | r.bit : all), 0n);

/** The names of the bits set in `mask`, in bit order; a bit nvml.h did not define when this was written is named by its value. */
export function clockEventNames(mask: bigint): string[] {
  const names = CLOCK_EVENT_REASONS.filter((r) => mask & r.bit).map((r) => r.name);
  const unknown = mask & ~KNOWN_BITS;
  for (let bit = 1n; bit <= unknown; bit <<= 1n) {
    if (unknown & bit) names.push(`unknown reason 0x${bit.toString(16)}`);
  }
  return names;
}

/** The names of the throttling bits set in `mask` (empty: not throttled). Unknown bits do not count: a new reason may be as harmless as idle. */
export function throttlingNames(mask: bigint): string[] {
  return clockEventNames(mask & THROTTLING_BITS);
}

/** What NVML said at one moment; a field it could not give is undefined. */
export interface ThrottleSample {
  /** The clocks-event-reasons mask. */
  reasons?: bigint;
  /** nvmlDeviceGetViolationStatus(NVML_PERF_POLICY_POWER).violationTime: cumulative ns. */
  powerViolationNs?: bigint;
  /** The same for NVML_PERF_POLICY_THERMAL. */
  thermalViolationNs?: bigint;
}

const hex = (mask: bigint | undefined) => (mask === undefined ? "unknown" : `0x${mask.toString(16)}`);

/** A counter's growth over the span; undefined where either end is missing, or it went backwards (a driver reload resets it). */
function growth(before: bigint | undefined, after: bigint | undefined): bigint | undefined {
  return before === undefined || after === undefined || after < before ? undefined : after - before;
}

function ms(ns: bigint): string {
  const v = Number(ns) / 1e6;
  return `${v < 10 ? v.toPrecision(2) : v.toFixed(0)} ms`;
}

/**
 * The conditions that say whether a span (the timed runs) was throttled,
 * from samples at its start and end. `throttled` is "no", "yes: <why>" (the
 * throttling reasons seen at either end, and any time the power or thermal
 * limit held the clocks down in between — so throttling that came and went
 * during the timing is seen too) or "unknown: <why>". With no `before`
 * (a board's stats, not a timing) it describes the moment of `after` alone.
 *
 * Keys: `clock_event_reasons` (the mask at the end, hex, as before this
 * module existed), `clock_event_reasons_before`, `clock_events` (the names
 * of every bit seen, or "none"), `power_violation_ns` and
 * `thermal_violation_ns` (growth over the span, where NVML counts it), and
 * `throttled`.
 */
export function describeThrottling(before: ThrottleSample | undefined, after: ThrottleSample): Record<string, string> {
  const out: Record<string, string> = { clock_event_reasons: hex(after.reasons) };
  if (before) out.clock_event_reasons_before = hex(before.reasons);
  const masks = [before?.reasons, after.reasons].filter((m): m is bigint => m !== undefined);
  const seen = masks.reduce((all, m) => all | m, 0n);
  out.clock_events = masks.length === 0 ? "unknown" : seen === 0n ? "none" : clockEventNames(seen).join(", ");
  const why = throttlingNames(seen);
  const violations: [string, bigint | undefined][] = before
    ? [
        ["power", growth(before.powerViolationNs, after.powerViolationNs)],
        ["thermal", growth(before.thermalViolationNs, after.thermalViolationNs)],
      ]
    : [];
  for (const [limit, ns] of violations) {
    if (ns === undefined) continue;
    out[`${limit}_violation_ns`] = String(ns);
    if (ns > 0n) why.push(`${limit} violation ${ms(ns)}`);
  }
  const counted = violations.some(([, ns]) => ns !== undefined);
  if (why.length > 0) out.throttled = `yes: ${why.join(", ")}`;
  else if (masks.length > 0 || counted) out.throttled = "no";
  else out.throttled = "unknown: NVML gave neither clocks event reasons nor violation counters";
  return out;
}

/**
 * Whether a result's conditions say it was measured while throttled:
 * true ("yes: …"), false ("no"), or undefined where the board could not
 * tell or does not say (CPU and VTA boards, a GPU without NVML).
 */
export function throttledOf(conditions: Readonly<Record<string, string>> | undefined): boolean | undefined {
  const t = conditions?.throttled;
  if (t === "no") return false;
  if (t?.startsWith("yes")) return true;
  return undefined;
}
