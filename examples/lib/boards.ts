/** The tuning examples' wait for their boards. */
import type { TrackerClient } from "kernelfarm";

/**
 * The boards of `key` attached to the tracker. An agent started just before
 * the script may still be attaching its boards: a request with a deadline
 * waits up to it for a board of the key to attach (the tracker's
 * DEADLINE_EXCEEDED then names the keys it serves), and its session is
 * closed at once.
 */
export async function boardsOf(client: TrackerClient, key: string, waitMs = 30_000) {
  await (await client.request(key, { deadlineMs: waitMs })).close();
  return (await client.summary({ key })).boards.filter((b) => b.key === key);
}
