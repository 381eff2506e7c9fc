/** The tuning examples' wait for their boards. */
import type { TrackerClient } from "kernelfarm";

/**
 * The boards of `key` attached to the tracker at `address`. An agent started
 * just before the script may still be attaching its boards, so this waits
 * for the first one up to `waitMs`, then names the key and the tracker.
 */
export async function boardsOf(client: TrackerClient, key: string, address: string, waitMs = 30_000) {
  const of = async () => (await client.summary()).boards.filter((b) => b.key === key);
  let boards = await of();
  for (const until = Date.now() + waitMs; boards.length === 0 && Date.now() < until;) {
    await new Promise((r) => setTimeout(r, 250));
    boards = await of();
  }
  if (boards.length === 0) throw new Error(`no board of key "${key}" is attached to ${address} (waited ${waitMs / 1000} s)`);
  return boards;
}
