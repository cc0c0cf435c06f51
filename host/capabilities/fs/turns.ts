// The turns of one (session, extension)'s file operations: at most MAX_FS_IN_FLIGHT run at once, the rest wait
// in order (Promise.all over many files works; a flood of them holds at most that many descriptors open).
// fs's own slot: each (session, extension) has one FsTurns (sessions/session.ts fsTurnsFor), apart from the HTTP
// state of net.
//
// Invariants: `running` never passes MAX_FS_IN_FLIGHT; a released turn passes to the first waiter, or frees the
// slot; a release counts once however often it is called; a waiter whose call ends leaves the queue and fails.
import { KilnError } from '../../errors.js';

/** fs operations a (session, extension) runs at once; more wait for a turn. */
export const MAX_FS_IN_FLIGHT = 16;

export class FsTurns {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  /** Wait for a turn (at most MAX_FS_IN_FLIGHT run at once); resolves to its release. */
  async take(signal: AbortSignal): Promise<() => void> {
    if (this.running < MAX_FS_IN_FLIGHT) this.running++;
    else {
      await new Promise<void>((resolve, reject) => {
        const go = () => {
          signal.removeEventListener('abort', stop);
          resolve();
        };
        const stop = () => {
          const at = this.waiting.indexOf(go);
          if (at >= 0) this.waiting.splice(at, 1);
          reject(new KilnError('the fs operation was cancelled while it waited: its call had ended'));
        };
        if (signal.aborted) return stop();
        this.waiting.push(go);
        signal.addEventListener('abort', stop, { once: true });
      });
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) next(); // the turn passes on: `running` stays
      else this.running--;
    };
  }
}
