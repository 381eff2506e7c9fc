/**
 * A fake clock for the specs of the pure lifecycle machines
 * (host-sdk/channel-machine.ts, tracker/lease-machine.ts,
 * device-agent/agent/pool-machine.ts): their shells' timers are effects, so
 * the clock arms and disarms them from the effects, and `advance()` feeds the
 * machine its timer event when one is due. A spec extends MachineClock with
 * its machine's `begin` and whatever else its rows need.
 */
import assert from "node:assert/strict";

/** What a machine's `step` returns: the next state and what the shell is to do. */
export interface Stepped<State, Effect> {
  readonly outcome: string;
  readonly state: State;
  readonly effects: readonly Effect[];
}

/** How the clock reads one machine. */
export interface ClockedMachine<State, Event, Effect, Timer, Step extends Stepped<State, Effect>> {
  step(state: State, event: Event): Step;
  /** The timer a `startTimer` effect arms and in how long; undefined for any other effect. */
  started(effect: Effect): { timer: Timer; ms: number } | undefined;
  /** The timer a `cancelTimer` effect disarms; undefined for any other effect. */
  cancelled(effect: Effect): Timer | undefined;
  /** The event the shell feeds when `timer` goes off. */
  fired(timer: Timer): Event;
  /** The machine's own record of the timers it has armed. */
  armed(state: State): Iterable<Timer>;
  /** A timer's name, as the shell keys it: two timers armed at once never share one. */
  key(timer: Timer): string;
}

/** One machine on a fake clock: feeds events, keeps the armed timers the effects asked for, fires them as time passes. */
export class MachineClock<State, Event, Effect, Timer, Step extends Stepped<State, Effect>> {
  private current: State;
  private now = 0;
  /** Every effect performed since the last `take()`, in order. */
  private readonly performed: Effect[] = [];
  private readonly timers = new Map<string, { timer: Timer; at: number }>();

  constructor(
    private readonly machine: ClockedMachine<State, Event, Effect, Timer, Step>,
    begun: { state: State; effects: readonly Effect[] },
  ) {
    this.current = begun.state;
    this.perform(begun.effects);
  }

  get state(): State {
    return this.current;
  }

  feed(event: Event): Step {
    const result = this.machine.step(this.current, event);
    if (result.outcome !== "applied") assert.equal(result.state, this.current, "an event that is not applied changes nothing");
    this.current = result.state;
    this.perform(result.effects);
    return result;
  }

  /** Moves the clock on, firing each timer that falls due (earliest first; of two due at once, the one armed first). */
  advance(ms: number): Step[] {
    const until = this.now + ms;
    const steps: Step[] = [];
    for (;;) {
      const due = [...this.timers.values()].filter((t) => t.at <= until).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.now = due.at;
      this.timers.delete(this.machine.key(due.timer));
      steps.push(this.feed(this.machine.fired(due.timer)));
    }
    this.now = until;
    return steps;
  }

  /** The effects since the last call. */
  take(): Effect[] {
    return this.performed.splice(0);
  }

  private perform(effects: readonly Effect[]): void {
    const key = (timer: Timer): string => this.machine.key(timer);
    for (const e of effects) {
      this.performed.push(e);
      const started = this.machine.started(e);
      const cancelled = started ? undefined : this.machine.cancelled(e);
      if (started) {
        assert.ok(!this.timers.has(key(started.timer)), `${key(started.timer)} armed twice`);
        this.timers.set(key(started.timer), { timer: started.timer, at: this.now + started.ms });
      } else if (cancelled !== undefined) {
        assert.ok(this.timers.delete(key(cancelled)), `${key(cancelled)} cancelled but not armed`);
      }
    }
    // The machine's own record of its timers is what the shell has armed: its end (a close, a kill) cancels exactly those.
    assert.deepEqual([...this.machine.armed(this.current)].map(key).sort(), [...this.timers.keys()].sort());
  }
}

/** Why a step was ignored; fails unless it was. */
export function ignoredWhy(s: { readonly outcome: string; readonly why?: string }): string {
  assert.equal(s.outcome, "ignored");
  return s.why ?? "";
}

/** What a refused step gives its caller; fails unless it was refused. */
export function refusal<E>(s: { readonly outcome: string; readonly error?: E }): E {
  assert.equal(s.outcome, "refused");
  if (s.error === undefined) throw new Error("a refused step carries its error");
  return s.error;
}
