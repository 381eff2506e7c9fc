// Original file: protos/farm/v1/agent.proto

/**
 * What a BoardHealthReport tells.
 */
export const HealthReportKind = {
  HEALTH_REPORT_KIND_UNSPECIFIED: 'HEALTH_REPORT_KIND_UNSPECIFIED',
  /**
   * a canary ran (ok: it passed)
   */
  HEALTH_REPORT_KIND_CANARY: 'HEALTH_REPORT_KIND_CANARY',
  /**
   * an infrastructure error (the board's worker failed to start, ...)
   */
  HEALTH_REPORT_KIND_INFRA: 'HEALTH_REPORT_KIND_INFRA',
} as const;

/**
 * What a BoardHealthReport tells.
 */
export type HealthReportKind =
  | 'HEALTH_REPORT_KIND_UNSPECIFIED'
  | 0
  /**
   * a canary ran (ok: it passed)
   */
  | 'HEALTH_REPORT_KIND_CANARY'
  | 1
  /**
   * an infrastructure error (the board's worker failed to start, ...)
   */
  | 'HEALTH_REPORT_KIND_INFRA'
  | 2

/**
 * What a BoardHealthReport tells.
 */
export type HealthReportKind__Output = typeof HealthReportKind[keyof typeof HealthReportKind]
