// ReadableStream.
import { $ } from './internal.js';

class ReadableStream {
  constructor(source = {}) {
    const st = { queue: [], closed: false, error: undefined, waiters: [], reader: null, source, pulling: null };
    this[$] = st;
    st.wake = () => { const ws = st.waiters; st.waiters = []; for (const w of ws) w(); };
    st.controller = {
      enqueue: (chunk) => { if (st.closed) throw new TypeError('ReadableStream is closed'); st.queue.push(chunk); st.wake(); },
      close: () => { st.closed = true; st.wake(); },
      error: (e) => { if (st.error === undefined) st.error = e === undefined ? new TypeError('stream errored') : e; st.queue = []; st.wake(); },
      get desiredSize() { return st.closed ? 0 : 1 - st.queue.length; },
    };
    if (typeof source.start === 'function') source.start(st.controller);
  }
  get locked() { return this[$].reader !== null; }
  getReader() {
    if (this.locked) throw new TypeError('ReadableStream is locked');
    const st = this[$];
    const reader = {
      read: async () => {
        for (;;) {
          if (st.reader !== reader) throw new TypeError('the reader was released');
          if (st.queue.length) return { value: st.queue.shift(), done: false };
          if (st.error !== undefined) throw st.error;
          if (st.closed) return { value: undefined, done: true };
          if (typeof st.source.pull === 'function') {
            st.pulling ??= Promise.resolve()
              .then(() => st.source.pull(st.controller))
              .then(() => { st.pulling = null; }, (e) => { st.pulling = null; st.controller.error(e); });
            await st.pulling;
          } else {
            await new Promise((resolve) => st.waiters.push(resolve));
          }
        }
      },
      releaseLock: () => { if (st.reader === reader) st.reader = null; },
      cancel: (reason) => this.cancel(reason, true),
    };
    st.reader = reader;
    return reader;
  }
  cancel(reason, fromReader) {
    const st = this[$];
    if (this.locked && !fromReader) return Promise.reject(new TypeError('ReadableStream is locked'));
    st.closed = true;
    st.queue = [];
    st.wake();
    return Promise.resolve(typeof st.source.cancel === 'function' ? st.source.cancel(reason) : undefined).then(() => undefined);
  }
  tee() { throw new TypeError('ReadableStream.tee is not supported in kiln'); }
  async *[Symbol.asyncIterator]() {
    const reader = this.getReader();
    let finished = false;
    try {
      for (;;) { const { value, done } = await reader.read(); if (done) { finished = true; return; } yield value; }
    } finally {
      if (!finished) await reader.cancel();
      reader.releaseLock();
    }
  }
}

export { ReadableStream };
