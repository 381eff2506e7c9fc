/**
 * Does a TVM server's accept loop answer on the address its clients will be
 * given? The probe connects there and sends an opening that a TVM server
 * reads and drops without a word in its log, then closes; the server goes on
 * waiting, its key and its tracker connection untouched. A server that
 * accepts nothing, an address where nothing listens, or a peer that answers
 * with bytes (no TVM server does) fails the probe.
 *
 * The opening depends on the server's kind (docs/tvm-tracker.md, "Servers
 * that stop answering"), told apart by its UPDATE_INFO, since what one drops
 * quietly the other does not:
 * * TVM's Python `rpc_server` (its `addr` port a JSON number) closes a
 *   connection whose first int32 is not the RPC magic, silently; a wrong
 *   match key would cost it a `mismatch key` WARNING per probe, and a length
 *   of 0 would crash its accept loop (it indexes the key's first word);
 * * TVM's C++ `tvm_rpc` (its port a string of digits) aborts on a wrong
 *   magic (LOG(FATAL)), but closes a handshake whose key length is shorter
 *   than a client's header, with an INFO line.
 *
 * The whole opening goes out in the connection's first write and the probe
 * waits for the server's close: a server that finds a connection closed
 * mid-handshake takes it for a broken tracker link and re-registers (its
 * `recvall` raises IOError), which a probe must never cause.
 */
import { connect, type Socket } from "node:net";
import { RPC_MAGIC, int32 } from "./wire.ts";

/** How long a server may take to answer a probe; it answers between two polls of its accept loop (milliseconds when idle). */
export const PROBE_TIMEOUT_MS = 2000;

/** Which TVM RPC server a board is: the two drop different openings quietly. */
export type TvmServerDialect = "python" | "c++";

/** "KFPR": not the RPC magic, which a Python server drops unanswered. */
const NOT_THE_MAGIC = Buffer.from("KFPR", "latin1");

const OPENINGS: Record<TvmServerDialect, Buffer> = {
  python: NOT_THE_MAGIC,
  // A key of 1 byte, shorter than any "client:<matchkey>": the C++ server closes before it reads the key.
  "c++": Buffer.concat([int32(RPC_MAGIC), int32(1)]),
};

/** undefined: the server's accept loop took the probe and closed it; otherwise what went wrong, for the board's health reason. */
export function probeTvmServer(host: string, port: number, dialect: TvmServerDialect, timeoutMs = PROBE_TIMEOUT_MS): Promise<string | undefined> {
  return new Promise((resolve) => {
    const where = `${host.includes(":") ? `[${host}]` : host}:${port}`;
    let socket: Socket;
    try {
      socket = connect({ host, port, noDelay: true });
    } catch (err) {
      // A port out of range throws here; probe() runs without a catch (its callers start it with `void`).
      resolve(`its RPC port ${where} cannot be probed: ${(err as Error).message}`);
      return;
    }
    let answered = 0;
    let settled = false;
    const settle = (why: string | undefined) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(why);
    };
    const timer = setTimeout(() => settle(`its RPC port ${where} did not close a probe within ${timeoutMs} ms`), timeoutMs);
    socket.once("connect", () => socket.write(OPENINGS[dialect]));
    socket.on("data", (chunk: Buffer) => (answered += chunk.length));
    socket.once("end", () =>
      settle(answered === 0 ? undefined : `its RPC port ${where} answered a probe with ${answered} bytes, where a TVM RPC server answers none`),
    );
    socket.once("error", (err: NodeJS.ErrnoException) => settle(`its RPC port ${where} cannot be reached: ${err.code ?? err.message}`));
    socket.once("close", () => settle(`its RPC port ${where} closed a probe abruptly`));
  });
}
