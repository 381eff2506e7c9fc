/**
 * A token-less flood of large gRPC requests at a tracker, as the attack in
 * issue 27 made it: CONNECTIONS connections (each a grpc-js client with a
 * channel of its own) × STREAMS concurrent unary Summary calls, each carrying
 * a body of BODY_BYTES that is no SummaryRequest (0xff bytes), and no token.
 * Bounded in count (`rounds` per stream) and in time (`untilMs`); loopback
 * only. Used by tests/auth-gate.test.ts and bench/flood.ts.
 */
import * as grpc from "@grpc/grpc-js";
import { FarmError } from "../../protos/index.ts";
import { CHANNEL_OPTIONS } from "../../runtime/index.ts";

export const FLOOD_CONNECTIONS = 16;
export const FLOOD_STREAMS = 5;
export const FLOOD_BODY_BYTES = 15 << 20;
const SUMMARY_PATH = "/farm.v1.HostService/Summary";

export interface FloodResult {
  /** Calls answered, by FarmError code. */
  codes: Map<string, number>;
  calls: number;
}

/** Runs the flood at `address` (plaintext, loopback) until every stream made `rounds` calls or `untilMs` passed. */
export async function summaryFlood(
  address: string,
  opts: { rounds: number; untilMs?: number; connections?: number; streams?: number; bodyBytes?: number },
): Promise<FloodResult> {
  const body = Buffer.alloc(opts.bodyBytes ?? FLOOD_BODY_BYTES, 0xff);
  const deadline = opts.untilMs ?? Infinity;
  const codes = new Map<string, number>();
  let calls = 0;
  const clients = Array.from(
    { length: opts.connections ?? FLOOD_CONNECTIONS },
    () => new grpc.Client(address, grpc.credentials.createInsecure(), CHANNEL_OPTIONS),
  );
  const one = (client: grpc.Client) =>
    new Promise<string>((resolve) =>
      client.makeUnaryRequest(
        SUMMARY_PATH,
        (b: Buffer) => b,
        (b: Buffer) => b,
        body,
        new grpc.Metadata(),
        { deadline: Date.now() + 30_000 },
        (err) => resolve(err ? FarmError.from(err).code : "OK"),
      ),
    );
  try {
    await Promise.all(
      clients.flatMap((client) =>
        Array.from({ length: opts.streams ?? FLOOD_STREAMS }, async () => {
          for (let r = 0; r < opts.rounds && Date.now() < deadline; r++) {
            const code = await one(client);
            calls++;
            codes.set(code, (codes.get(code) ?? 0) + 1);
          }
        }),
      ),
    );
  } finally {
    for (const c of clients) c.close();
  }
  return { codes, calls };
}
