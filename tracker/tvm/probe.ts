/**
 * Does a TVM server answer on the address its clients will be given? The
 * probe connects there and opens as a client with a match key no server
 * holds; a TVM server's accept loop reads it and answers RPC_CODE_MISMATCH
 * (docs/tvm-tracker.md, "TVM's protocol" §3), then goes on waiting, its key
 * and its tracker connection untouched. A server that accepts nothing, or an
 * address where nothing listens, fails the probe.
 *
 * The whole handshake goes out in the connection's first write and the probe
 * reads the answer before closing: a server that finds a connection closed
 * mid-handshake takes it for a broken tracker link and re-registers (its
 * `recvall` raises IOError), which a probe must never cause. Each probe costs
 * the server one "mismatch key" line in its log.
 */
import { connect, type Socket } from "node:net";
import { randomBytes } from "node:crypto";
import { RPC_CODE_MISMATCH, RPC_MAGIC, int32 } from "./wire.ts";

/** How long a server may take to answer a probe; it answers between two polls of its accept loop (milliseconds when idle). */
export const PROBE_TIMEOUT_MS = 2000;

/** undefined: the server answered; otherwise what went wrong, for the board's health reason. */
export function probeTvmServer(host: string, port: number, timeoutMs = PROBE_TIMEOUT_MS): Promise<string | undefined> {
  return new Promise((resolve) => {
    const key = Buffer.from(`client:kernelfarm-probe:${randomBytes(6).toString("hex")}`, "utf8");
    const where = `${host.includes(":") ? `[${host}]` : host}:${port}`;
    let socket: Socket;
    try {
      socket = connect({ host, port, noDelay: true });
    } catch (err) {
      // A port out of range throws here; probe() runs without a catch (its callers start it with `void`).
      resolve(`its RPC port ${where} cannot be probed: ${(err as Error).message}`);
      return;
    }
    let answer = Buffer.alloc(0);
    let settled = false;
    const settle = (why: string | undefined) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(why);
    };
    const timer = setTimeout(() => settle(`its RPC port ${where} did not answer a probe within ${timeoutMs} ms`), timeoutMs);
    socket.once("connect", () => socket.write(Buffer.concat([int32(RPC_MAGIC), int32(key.length), key])));
    socket.on("data", (chunk: Buffer) => {
      answer = Buffer.concat([answer, chunk]);
      if (answer.length < 4) return;
      const code = answer.readInt32LE(0);
      settle(
        code === RPC_CODE_MISMATCH
          ? undefined
          : `its RPC port ${where} answered a probe with 0x${(code >>> 0).toString(16)}, not a TVM RPC server's key mismatch (0x${RPC_CODE_MISMATCH.toString(16)})`,
      );
    });
    socket.once("error", (err: NodeJS.ErrnoException) => settle(`its RPC port ${where} cannot be reached: ${err.code ?? err.message}`));
    socket.once("close", () => settle(`its RPC port ${where} closed a probe without answering`));
  });
}
