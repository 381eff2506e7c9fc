/**
 * A kernelfarm board of kind `tvm` granted to a TVM client on the TVM port
 * (docs/tvm-boards.md): Apache TVM's runtime behind a kernelfarm agent. The
 * client is told where to connect as it would be for a TVM server — the
 * agent's direct-lane port, which reads TVM's handshake — with a match key
 * bound to this one session: `<session id>:<ticket>`, the lease's own
 * ticket (unguessable, opening the session's lane once, dying with the
 * lease). The agent checks it as it checks a host's hello
 * (device-agent/agent/tvm-door.ts).
 */
import { TVM_FARM_BOARD_KIND, boardState, type Board, type BoardLease } from "../registry.ts";

/** TVM's grant `[host, port, matchkey]` for a lease on a kernelfarm `tvm` board; undefined for any other board. */
export function farmBoardGrant(lease: BoardLease): [string, number, string] | undefined {
  const { board } = lease;
  const data = board.agent.data;
  // TVM's RPC protocol has no TLS: an agent serves tvm boards only on a plaintext direct lane (it refuses to start otherwise).
  if (board.kind !== TVM_FARM_BOARD_KIND || board.agent.protocol !== "kernelfarm" || !data || data.tls) return undefined;
  return [data.host, data.port, `${lease.id}:${lease.token}`];
}

/**
 * A kernelfarm `tvm` board in the TVM port's SUMMARY, as TVM's tracker lists
 * a server (`query_rpc_tracker`'s Server List): its key as `server:K`, the
 * address its clients connect to, and kernelfarm's extra fields. Undefined
 * for any other board (TVM servers are listed from their connections).
 */
export function farmBoardInfo(board: Board): Record<string, unknown> | undefined {
  if (board.kind !== TVM_FARM_BOARD_KIND || board.agent.protocol !== "kernelfarm") return undefined;
  const data = board.agent.data;
  return { key: `server:${board.key}`, addr: data ? [data.host, data.port] : [null, null], board: board.id, state: boardState(board) };
}
