/** The tracker part: start one with startTracker(). */
export { Tracker, startTracker } from "./tracker.ts";
export { resolveTrackerOptions, DEFAULT_OPEN_TIMEOUT_MS, type TrackerOptions, type ResolvedTrackerOptions } from "./options.ts";
export { formatSummary, type FormatSummaryOptions } from "./summary.ts";
export { DEFAULT_MAX_CANARY_DRIFT } from "./canary-drift.ts";
export type { FarmEvent } from "./events.ts";
export type { FeedMessage, FeedSnapshot } from "./live/protocol.ts";
export { TOKEN_KINDS, TokenFile, type Identity, type TokenKind, type TokenSpec } from "./tokens.ts";
