/** The session suite, run once per route (tests/routes/*.test.ts set KFARM_ROUTE first). */
await import("../session.test.ts");
await import("../bad-input.test.ts");
await import("../measure.test.ts");
await import("../content-store.test.ts");
await import("../robustness.test.ts");
await import("../vta-farm.test.ts");
await import("../error-details.test.ts");
export {};
