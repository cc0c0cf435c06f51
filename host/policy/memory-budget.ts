// The server's ceiling on guest memory: [limits] totalMemoryBytes. Each live guest reserves its own heap limit
// (plus the engine's fixed overhead) when it is created, and gives it back when it is discarded, so the sum of
// what guests can hold never passes the ceiling. Past it, idle sessions' guests are reclaimed first (least
// recently used); if that is not enough, creating the guest fails with a message naming the setting.
// Admission by reservation is exact where measuring is not: a guest's heap limit is enforced (engine), so the
// reservation is what it can take.
import { KilnError } from '../errors.js';

/** What every guest costs beyond its heap limit: the engine's data and stack, and the image while it is read. */
export const GUEST_OVERHEAD_BYTES = 8 * 1024 * 1024;

export class MemoryBudgetError extends KilnError {
  override name = 'MemoryBudgetError';
}

export class MemoryBudget {
  private used = 0;

  /** `reclaim(bytes)` frees idle guests (their release functions run) to make room for `bytes` more. */
  constructor(readonly total: number, private readonly reclaim: (bytes: number) => void = () => {}) {}

  get reserved(): number {
    return this.used;
  }

  /** Reserve room for a guest with heap limit `heap`; returns the function that gives it back (once). */
  reserve(heap: number): () => void {
    const bytes = heap + GUEST_OVERHEAD_BYTES;
    if (this.used + bytes > this.total) this.reclaim(this.used + bytes - this.total);
    if (this.used + bytes > this.total) {
      throw new MemoryBudgetError(
        `no room for another guest: live guests already reserve ${this.used} of the server's ${this.total} bytes ` +
          `([limits] totalMemoryBytes), and this one needs ${bytes}; raise the setting, lower [limits] memoryLimitBytes, or end idle sessions`,
      );
    }
    this.used += bytes;
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.used -= bytes;
    };
  }
}
