/**
 * Board health: a small state machine fed by canary results (their answers
 * and, through tracker/canary-drift.ts, their speed), infrastructure errors
 * and operator commands. Only healthy and suspect boards are granted.
 * "Slow": the canary's recent time is beyond `maxCanaryDrift` × its baseline.
 *
 * | from        | on                                   | to          |
 * |-------------|--------------------------------------|-------------|
 * | healthy     | canary failed / infrastructure error | suspect     |
 * | healthy     | canary passed, slow                  | suspect ("canary 1.42× slower than its baseline: 18.1 µs against 12.7 µs") |
 * | suspect     | canary passed, not slow              | healthy     |
 * | suspect     | canary passed, slow                  | suspect: the reason takes the new figures (not a transition) |
 * | suspect     | another failure (QUARANTINE_AFTER in a row) | quarantined |
 * | quarantined | RESTORE_AFTER canary passes in a row (automatic quarantine only) | healthy, or suspect if the last was slow |
 * | any         | operator quarantine                  | quarantined (held: canaries do not lift it) |
 * | any         | operator restore                     | healthy (counters reset, the canary baseline learned again) |
 * | any         | a canary result it has applied already (by its agent's clock) | unchanged: ignored |
 *
 * A slow canary never counts as a failure: the board's answers are right,
 * so it stays grantable (suspect), and only its speed is in question.
 *
 * Every transition returns its reason so the caller can publish it, and is
 * kept in a bounded history. The whole machine outlives its board's
 * attachment (tracker/board-memory.ts keeps it by board id, and with a state
 * directory across the tracker's restarts): `snapshot()` and `restore()`.
 * That is why a repeated canary must be recognised: an agent sends each
 * board's last canary result again whenever it attaches (a tracker that
 * starts with no memory learns it so), and counting it twice could
 * quarantine a board for one failure.
 */
import { BOARD_HEALTH } from "../protos/index.ts";
import { CanaryDrift, DEFAULT_MAX_CANARY_DRIFT, slowerReason, withinReason, type CanaryRecord } from "./canary-drift.ts";

/** Declared once, as common.proto's BoardHealth (protos/enums.ts). */
export const HEALTH_STATES = BOARD_HEALTH.names;
export type HealthState = (typeof HEALTH_STATES)[number];

/** Failures in a row that quarantine a board. */
export const QUARANTINE_AFTER = 2;
/** Canary passes in a row that bring an automatically quarantined board back. */
export const RESTORE_AFTER = 2;
/** Transitions kept per board, newest last. */
export const HEALTH_HISTORY_MAX = 50;

/** What the tracker's options decide in the machine. */
export interface HealthPolicy {
  /** A canary this many times slower than its baseline makes the board suspect; 0: never (TrackerOptions.maxCanaryDrift). */
  maxCanaryDrift: number;
}

export const DEFAULT_HEALTH_POLICY: HealthPolicy = { maxCanaryDrift: DEFAULT_MAX_CANARY_DRIFT };

/**
 * `at`: when the agent saw a canary's result, by its own clock (0: not said).
 * `kernelNs`: a passing canary's kernel time per run (0 or absent: not timed). `note`: the operator's why.
 */
export type HealthInput =
  | { kind: "canary_passed"; detail: string; at?: number; kernelNs?: number }
  | { kind: "canary_failed"; reason: string; at?: number }
  | { kind: "infra_error"; reason: string }
  | { kind: "operator_quarantine"; by: string; note?: string }
  | { kind: "operator_restore"; by: string };

export interface HealthTransition {
  from: HealthState;
  to: HealthState;
  reason: string;
}

/** A transition in the history: when (the tracker's clock), from, to, why. */
export interface HealthChange extends HealthTransition {
  at: number;
}

/** Everything the machine holds, as plain data (what the tracker's state file keeps). */
export interface HealthRecord {
  state: HealthState;
  reason: string;
  lastError: string;
  lastCanary: string;
  lastCanaryAt: number;
  /** The agent's time of the last canary result applied (HealthInput.at). */
  agentCanaryAt: number;
  /** Failures and passes in a row, each capped where it stops mattering (QUARANTINE_AFTER, RESTORE_AFTER). */
  failures: number;
  passes: number;
  /** Quarantined by an operator. */
  held: boolean;
  history: HealthChange[];
  /** The canary's timings and baseline (tracker/canary-drift.ts). */
  canary: CanaryRecord;
}

export class BoardHealth {
  state: HealthState = "healthy";
  /** Why it is in its state (empty while healthy from the start). */
  reason = "";
  /** The last failure seen, kept after recovery for the live view. */
  lastError = "";
  /** The last canary's outcome ("passed: ..." / "failed: ..."), and when it came. */
  lastCanary = "";
  lastCanaryAt = 0;
  private failures = 0;
  private passes = 0;
  /** Quarantined by an operator: only a restore lifts it. */
  private held = false;
  private agentCanaryAt = 0;
  private readonly changes: HealthChange[] = [];
  /** The canary's speed against its baseline. */
  private drift = new CanaryDrift();

  /** The machine as a record left it (tracker/board-memory.ts). */
  static restore(r: HealthRecord): BoardHealth {
    const h = new BoardHealth();
    h.state = r.state;
    h.reason = r.reason;
    h.lastError = r.lastError;
    h.lastCanary = r.lastCanary;
    h.lastCanaryAt = r.lastCanaryAt;
    h.agentCanaryAt = r.agentCanaryAt;
    h.failures = r.failures;
    h.passes = r.passes;
    h.held = r.held;
    h.changes.push(...r.history.slice(-HEALTH_HISTORY_MAX));
    h.drift = CanaryDrift.restore(r.canary);
    return h;
  }

  snapshot(): HealthRecord {
    return {
      state: this.state,
      reason: this.reason,
      lastError: this.lastError,
      lastCanary: this.lastCanary,
      lastCanaryAt: this.lastCanaryAt,
      agentCanaryAt: this.agentCanaryAt,
      // Beyond these, more in a row decide nothing: a board that keeps passing keeps the same record.
      failures: Math.min(this.failures, QUARANTINE_AFTER),
      passes: Math.min(this.passes, RESTORE_AFTER),
      held: this.held,
      history: [...this.changes],
      canary: this.drift.snapshot(),
    };
  }

  /** The canary's timings, baseline and drift. */
  get canary(): Readonly<CanaryDrift> {
    return this.drift;
  }

  /** The last transitions, oldest first (at most HEALTH_HISTORY_MAX). */
  get history(): readonly HealthChange[] {
    return this.changes;
  }

  /** Quarantined by an operator: canaries do not lift it (a TVM server's probes stop trying: tracker/tvm/server.ts). */
  get heldByOperator(): boolean {
    return this.held;
  }

  get grantable(): boolean {
    return this.state !== "quarantined";
  }

  /**
   * Applies `input`; returns the transition, or undefined when the state did
   * not change (the reason may have: a slow board's figures).
   */
  apply(input: HealthInput, policy: HealthPolicy = DEFAULT_HEALTH_POLICY): HealthTransition | undefined {
    const from = this.state;
    if (input.kind === "canary_passed" || input.kind === "canary_failed") {
      if (input.at) {
        if (input.at <= this.agentCanaryAt) return undefined;
        this.agentCanaryAt = input.at;
      }
      this.lastCanary = input.kind === "canary_passed" ? `passed: ${input.detail}` : `failed: ${input.reason}`;
      this.lastCanaryAt = Date.now();
    }
    switch (input.kind) {
      case "canary_passed": {
        this.failures = 0;
        this.passes++;
        const wasSlow = this.drift.slow;
        // What an agent sends: a time that is not one (NaN, negative, infinite) is no timing, and the pass stands.
        const ns = input.kernelNs;
        const v = ns !== undefined && Number.isFinite(ns) && ns > 0 ? this.drift.record(ns, policy.maxCanaryDrift) : undefined;
        const slow = v?.kind === "slower" ? slowerReason(v) : undefined;
        if (this.state === "suspect") {
          if (slow) {
            this.reason = slow;
            return undefined;
          }
          return this.move(from, "healthy", wasSlow && v?.kind === "within" ? withinReason(v, policy.maxCanaryDrift) : "canary passed");
        }
        if (this.state === "healthy" && slow) return this.move(from, "suspect", slow);
        if (this.state === "quarantined" && !this.held && this.passes >= RESTORE_AFTER) {
          const passed = `${this.passes} canaries passed in a row`;
          return slow ? this.move(from, "suspect", `${passed}, but ${slow}`) : this.move(from, "healthy", passed);
        }
        return undefined;
      }
      case "canary_failed":
      case "infra_error": {
        const what = input.kind === "canary_failed" ? `canary failed: ${input.reason}` : `infrastructure error: ${input.reason}`;
        this.lastError = what;
        this.passes = 0;
        this.failures++;
        if (this.state === "healthy") return this.move(from, "suspect", what);
        if (this.state === "suspect" && this.failures >= QUARANTINE_AFTER) {
          return this.move(from, "quarantined", `${this.failures} failures in a row, the last: ${what}`);
        }
        // Suspect for its speed, now for a failure: say the worse.
        if (this.state === "suspect") this.reason = what;
        return undefined;
      }
      case "operator_quarantine":
        this.held = true;
        return from === "quarantined" && this.reason.startsWith("quarantined by")
          ? undefined
          : this.move(from, "quarantined", `quarantined by ${input.by}${input.note ? `: ${input.note}` : ""}`);
      case "operator_restore":
        this.held = false;
        this.failures = 0;
        this.passes = 0;
        // The operator vouches for the board as it is now: its speed too.
        this.drift.reset();
        return from === "healthy" ? undefined : this.move(from, "healthy", `restored by ${input.by}`);
    }
  }

  private move(from: HealthState, to: HealthState, reason: string): HealthTransition {
    this.state = to;
    this.reason = reason;
    this.changes.push({ at: Date.now(), from, to, reason });
    if (this.changes.length > HEALTH_HISTORY_MAX) this.changes.splice(0, this.changes.length - HEALTH_HISTORY_MAX);
    return { from, to, reason };
  }
}
