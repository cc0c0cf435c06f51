// A budget of steps for one piece of synchronous work (a validation), so that its cost is bounded by what it
// does, never by the clock. `run` opens the budget (nested runs share the outer one); `spend` counts against
// it and throws the budget's own error past the limit; outside a run nothing is counted (the caller bounds
// that work otherwise, e.g. by a schema's size).
export class WorkBudget {
  private left: number | undefined;
  /** What the last finished run spent (how tests and the bench see the count). */
  lastSpent = 0;
  private started = 0;

  constructor(readonly limit: number, private readonly exceeded: () => Error) {}

  /** `limit`: this run's, when not the budget's own. */
  run<T>(f: () => T, limit = this.limit): T {
    if (this.left !== undefined) return f();
    this.left = limit;
    this.started = limit;
    try {
      return f();
    } finally {
      this.lastSpent = this.started - this.left;
      this.left = undefined;
    }
  }

  spend(steps: number): void {
    if (this.left === undefined) return;
    this.left -= steps;
    if (this.left < 0) throw this.exceeded();
  }
}
