/**
 * The timers of a pure lifecycle machine's shell (tracker/lease.ts,
 * device-agent/agent/pool.ts, host-sdk/frame-channel.ts): the machine asks
 * for them by name in `startTimer` / `cancelTimer` effects and keeps its own
 * record of which are armed, so the shell needs only a handle per name.
 */
export class NamedTimers<K> {
  private readonly handles = new Map<K, NodeJS.Timeout>();

  /**
   * Arms `name`: after `ms` it is forgotten, then `onFire` runs (which may arm
   * it again). A name still armed is cleared first, so that a stale timer can
   * never fire into the machine. `unref`: this timer alone keeps no process alive.
   */
  start(name: K, ms: number, onFire: () => void, opts: { unref?: boolean } = {}): void {
    this.cancel(name);
    const handle = setTimeout(() => {
      this.handles.delete(name);
      onFire();
    }, ms);
    if (opts.unref) handle.unref();
    this.handles.set(name, handle);
  }

  /** Disarms `name`; one not armed (fired already, or never started) is no error. */
  cancel(name: K): void {
    clearTimeout(this.handles.get(name));
    this.handles.delete(name);
  }
}
