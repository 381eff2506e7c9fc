/**
 * The whole session suite again on the relay route (the default run takes
 * auto, which is direct on a loopback farm): every lane must pass it.
 */
process.env.KFARM_ROUTE = "relay";
await import("./session-suite.ts");
export {};
