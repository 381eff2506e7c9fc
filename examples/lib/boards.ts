/** The tuning examples' wait for their boards, and their refusal of a farm that has none of the kind they need. */
import { FarmError, type TrackerClient } from "kernelfarm";

/** What each kind's board looks like on `kfarm agent`'s command line, for the message that says how to add one. */
const BOARD_FLAG: Record<string, (key: string) => string> = {
  cuda: (key) => `cuda:all:key=${key}`,
  "vta-sim": (key) => `vta-sim:key=${key}`,
  vta: (key) => `vta:pynq:key=${key}`,
  cpu: (key) => `cpu:key=${key}`,
};

/** "2 cuda boards, 1 vta-sim board" */
function countKinds(boards: ReadonlyArray<{ kind: string }>): string {
  const n = new Map<string, number>();
  for (const b of boards) n.set(b.kind, (n.get(b.kind) ?? 0) + 1);
  return [...n].map(([kind, count]) => `${count} ${kind} board${count === 1 ? "" : "s"}`).join(", ");
}

/** "cuda (2 cuda boards), vta (1 vta-sim board)" */
function describeKeys(boards: ReadonlyArray<{ key: string; kind: string }>): string {
  const keys = [...new Set(boards.map((b) => b.key))].sort();
  return keys.map((key) => `${key} (${countKinds(boards.filter((b) => b.key === key))})`).join(", ");
}

/**
 * The boards of `key` attached to the tracker, which must be of one of
 * `kinds` (the first is the one to suggest adding).
 *
 * A farm with boards but none of the key, or only boards of another kind
 * under it, is refused at once (NO_BOARD), naming the keys the farm serves,
 * the key its boards of the kind have if any, and how to add one: waiting
 * would not bring one. A farm with no boards at all may be an agent still
 * attaching, started just before the script: a request with a deadline
 * waits up to `waitMs` for a board of the key (the tracker's
 * DEADLINE_EXCEEDED then names the keys it serves), and its session is
 * closed at once.
 */
export async function boardsOf(client: TrackerClient, key: string, opts: { kinds: readonly string[]; waitMs?: number }) {
  const all = (await client.summary()).boards;
  const fits = (b: { kind: string }) => opts.kinds.includes(b.kind);
  const ofKey = all.filter((b) => b.key === key);
  if (all.length > 0 && !ofKey.some(fits)) {
    const kinds = opts.kinds.join(" or ");
    const elsewhere = [...new Set(all.filter(fits).map((b) => b.key))].sort();
    const flag = (BOARD_FLAG[opts.kinds[0]!] ?? ((k: string) => `${opts.kinds[0]}:key=${k}`))(key);
    throw new FarmError(
      "NO_BOARD",
      `no ${kinds} board of key "${key}" at ${client.address}: ` +
        (ofKey.length ? `that key has ${countKinds(ofKey)}` : `it serves ${describeKeys(all)}`) +
        (elsewhere.length
          ? `; its ${kinds} boards have key ${elsewhere.join(", ")}: run with --key ${elsewhere[0]}`
          : `; add one with \`kfarm agent --tracker ${client.address} --board ${flag}\` on a host that has one`),
    );
  }
  await (await client.request(key, { deadlineMs: opts.waitMs ?? 30_000 })).close();
  return (await client.summary({ key })).boards.filter((b) => b.key === key);
}

/** Ends the script with the farm's one-line answer (what happened, what to do) instead of a stack trace. */
export function exitWithFarmError(err: unknown): never {
  const e = FarmError.from(err);
  console.error(`${e.message} [${e.code}]`);
  process.exit(1);
}
