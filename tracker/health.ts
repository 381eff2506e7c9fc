/**
 * Board health: a small state machine fed by canary results, infrastructure
 * errors and operator commands. Only healthy and suspect boards are granted.
 *
 * | from        | on                                   | to          |
 * |-------------|--------------------------------------|-------------|
 * | healthy     | canary failed / infrastructure error | suspect     |
 * | suspect     | canary passed                        | healthy     |
 * | suspect     | another failure (QUARANTINE_AFTER in a row) | quarantined |
 * | quarantined | RESTORE_AFTER canary passes in a row (automatic quarantine only) | healthy |
 * | any         | operator quarantine                  | quarantined (held: canaries do not lift it) |
 * | any         | operator restore                     | healthy (counters reset) |
 *
 * Every transition returns its reason so the caller can publish it.
 */

export const HEALTH_STATES = ["healthy", "suspect", "quarantined"] as const;
export type HealthState = (typeof HEALTH_STATES)[number];

/** Failures in a row that quarantine a board. */
export const QUARANTINE_AFTER = 2;
/** Canary passes in a row that bring an automatically quarantined board back. */
export const RESTORE_AFTER = 2;

export type HealthInput =
  | { kind: "canary_passed"; detail: string }
  | { kind: "canary_failed"; reason: string }
  | { kind: "infra_error"; reason: string }
  | { kind: "operator_quarantine"; by: string }
  | { kind: "operator_restore"; by: string };

export interface HealthTransition {
  from: HealthState;
  to: HealthState;
  reason: string;
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

  get grantable(): boolean {
    return this.state !== "quarantined";
  }

  /** Applies `input`; returns the transition, or undefined when the state did not change. */
  apply(input: HealthInput): HealthTransition | undefined {
    const from = this.state;
    if (input.kind === "canary_passed" || input.kind === "canary_failed") {
      this.lastCanary = input.kind === "canary_passed" ? `passed: ${input.detail}` : `failed: ${input.reason}`;
      this.lastCanaryAt = Date.now();
    }
    switch (input.kind) {
      case "canary_passed":
        this.failures = 0;
        this.passes++;
        if (this.state === "suspect") return this.move(from, "healthy", "canary passed");
        if (this.state === "quarantined" && !this.held && this.passes >= RESTORE_AFTER) {
          return this.move(from, "healthy", `${this.passes} canaries passed in a row`);
        }
        return undefined;
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
        return undefined;
      }
      case "operator_quarantine":
        this.held = true;
        return from === "quarantined" && this.reason.startsWith("quarantined by") ? undefined : this.move(from, "quarantined", `quarantined by ${input.by}`);
      case "operator_restore":
        this.held = false;
        this.failures = 0;
        this.passes = 0;
        return from === "healthy" ? undefined : this.move(from, "healthy", `restored by ${input.by}`);
    }
  }

  private move(from: HealthState, to: HealthState, reason: string): HealthTransition {
    this.state = to;
    this.reason = reason;
    return { from, to, reason };
  }
}
