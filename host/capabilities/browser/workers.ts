// The dedicated workers of one page or out-of-process frame, reached through its CDP session: a page's
// workers run on threads of their own, so stopping the page's scripts does not stop them, and their heaps are
// not in the page's. The page's bounds (bounds.ts) pause them between calls and count their memory.
//
// Invariants:
//  - Only dedicated workers attached to the CDP session are reached (auto-attach, not flattened: messages go
//    through the page's session); a worker started by a worker, or a shared worker, is not.
//  - No message waits longer than WORKER_MS: a worker that does not answer within it is taken as gone (its
//    answer is undefined), so a wedged worker never holds up the end of a call.
import type { CDPSession } from 'playwright-core';

/** How long a worker has to answer one CDP message before it is taken as gone. */
const WORKER_MS = 2000;

/** The dedicated workers attached to one CDP session, reached by messages through it: paused in their
 *  debugger between calls, their heaps counted with their page's. A worker that does not answer within
 *  WORKER_MS is taken as gone (its message's answer is undefined). */
export class WorkerTargets {
  private readonly ids = new Set<string>();
  private readonly pending = new Map<number, (result: unknown) => void>();
  private next = 1;

  constructor(private readonly session: CDPSession) {
    session.on('Target.attachedToTarget', (e) => {
      if (e.targetInfo.type === 'worker') this.ids.add(e.sessionId);
    });
    session.on('Target.detachedFromTarget', (e) => {
      if (e.sessionId) this.ids.delete(e.sessionId);
    });
    session.on('Target.receivedMessageFromTarget', (e) => {
      let m: { id?: number; result?: unknown };
      try {
        m = JSON.parse(e.message);
      } catch {
        return;
      }
      const done = m.id === undefined ? undefined : this.pending.get(m.id);
      if (done) {
        this.pending.delete(m.id!);
        done(m.result);
      }
    });
  }

  /** `method` sent to every worker; their results, in no particular order. */
  send(method: string): Promise<unknown[]> {
    return Promise.all([...this.ids].map((sessionId) => new Promise<unknown>((resolve) => {
      const id = this.next++;
      const timer = setTimeout(() => {
        this.pending.delete(id);
        resolve(undefined);
      }, WORKER_MS);
      this.pending.set(id, (result) => {
        clearTimeout(timer);
        resolve(result);
      });
      this.session.send('Target.sendMessageToTarget', { sessionId, message: JSON.stringify({ id, method, params: {} }) }).catch(() => {
        clearTimeout(timer);
        this.pending.delete(id);
        resolve(undefined);
      });
    })));
  }

  async pause(): Promise<void> {
    await this.send('Debugger.enable');
    await this.send('Debugger.pause');
  }

  async resume(): Promise<void> {
    await this.send('Debugger.resume');
    await this.send('Debugger.disable');
  }
}
