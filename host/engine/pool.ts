// The worker threads that run guests, shared by the sessions of a server.
//
// A session is placed on the running worker with the fewest sessions that is not busy. "Busy" means the
// worker has been running guest code for more than BUSY_MS without a break: since calls within a session are
// serialised, that is some other session's guest, spinning until its deadline. A session whose worker is busy
// when its next call starts moves to another worker (its guests are recreated there: fresh globals, the same
// vars), so a spinning guest delays no other session's new calls. The pool grows past its size only while
// all its workers are busy.
import { availableParallelism } from 'node:os';
import { KilnError } from '../errors.js';
import type { Engine } from './engine.js';
import { SessionWorker } from './remote.js';

export const BUSY_MS = 20;

export class WorkerPool {
  private workers: SessionWorker[] = [];

  constructor(private readonly engine: Engine, readonly size = Math.max(2, availableParallelism())) {}

  /** A worker for a session: the least loaded one that is running and not busy (a new one if none is). */
  acquire(): SessionWorker {
    this.workers = this.workers.filter((w) => w.running);
    const free = this.workers.filter((w) => w.busyMs() <= BUSY_MS).sort((a, b) => a.sessions - b.sessions);
    let w = free[0];
    if (!w || (this.workers.length < this.size && w.sessions > 0)) {
      w = new SessionWorker(this.engine);
      this.workers.push(w);
    }
    w.sessions++;
    return w;
  }

  release(w: SessionWorker): void {
    w.sessions = Math.max(0, w.sessions - 1);
    // Workers started while all others were busy are let go once empty, down to the pool's size.
    if (w.sessions === 0 && this.workers.length > this.size) {
      this.workers = this.workers.filter((x) => x !== w);
      w.terminate(new KilnError('an extra worker was released'));
    }
  }

  /** Start the pool's threads ahead of the first session. */
  warm(): void {
    while (this.workers.length < this.size) this.workers.push(new SessionWorker(this.engine));
  }

  closeAll(): void {
    for (const w of this.workers) w.terminate(new KilnError('the server is stopping'));
    this.workers = [];
  }
}
