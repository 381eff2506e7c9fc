/**
 * measure(), the host SDK's batch measuring service for auto-tuners: its
 * public surface, and the only file of this folder the rest of the SDK
 * imports — the files beside it are how it works (docs/measure.md) and may
 * change shape without anyone outside noticing.
 */
export { measure, Measurer, type BatchOptions } from "./measurer.ts";
export {
  MEASURE_OUTCOMES,
  DEFAULT_REMEASURE_TIMES,
  DEFAULT_INFRA_DEADLINE_MS,
  DEFAULT_RETRIES,
  DEFAULT_IN_FLIGHT_PER_BOARD,
  type Candidate,
  type CandidateSource,
  type MeasureArg,
  type MeasureOptions,
  type MeasureResult,
  type MeasureOutcome,
  type ReferenceFn,
  type RemeasureOptions,
  type MeasureReport,
  type BoardReport,
  type IdleTime,
} from "./types.ts";
export { formatReport } from "./format-report.ts";
export { candidateDigest } from "./candidate-digest.ts";
