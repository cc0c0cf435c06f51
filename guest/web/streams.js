// ReadableStream, WritableStream and TransformStream: the Streams Standard's shapes with a simple queue (one
// chunk of high-water mark, no byte streams or BYOB readers), piping, tee and ReadableStream.from.
import { $ } from './internal.js';
import { AbortController } from './abort.js';

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
      // A read still pending rejects with a TypeError (the Streams Standard since 2022, and Node).
      releaseLock: () => { if (st.reader === reader) { st.reader = null; st.wake(); } },
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
  tee() {
    const reader = this.getReader();
    const branches = [];
    let reading = null;
    const pull = () => (reading ??= reader.read().then(({ value, done }) => {
      reading = null;
      for (const b of branches) if (!b.cancelled) { if (done) b.controller.close(); else b.controller.enqueue(value); }
    }, (e) => { for (const b of branches) b.controller.error(e); }));
    for (let i = 0; i < 2; i++) {
      const b = { cancelled: false, controller: null };
      branches.push(b);
      b.stream = new ReadableStream({
        start(c) { b.controller = c; },
        pull,
        cancel: (reason) => { b.cancelled = true; if (branches.every((x) => x.cancelled)) return reader.cancel(reason); },
      });
    }
    return [branches[0].stream, branches[1].stream];
  }
  async pipeTo(destination, options = {}) {
    if (!(destination instanceof WritableStream)) throw new TypeError('pipeTo: the destination must be a WritableStream');
    const reader = this.getReader();
    const writer = destination.getWriter();
    const signal = options.signal;
    try {
      for (;;) {
        if (signal && signal.aborted) throw signal.reason;
        const { value, done } = await reader.read();
        if (done) break;
        await writer.write(value);
      }
      if (!options.preventClose) await writer.close();
    } catch (e) {
      if (!options.preventAbort) await writer.abort(e).catch(() => {});
      if (!options.preventCancel) await reader.cancel(e).catch(() => {});
      throw e;
    } finally {
      reader.releaseLock();
      writer.releaseLock();
    }
  }
  pipeThrough(transform, options) {
    if (!transform || !(transform.writable instanceof WritableStream) || !(transform.readable instanceof ReadableStream)) {
      throw new TypeError('pipeThrough: the argument must have a writable and a readable side');
    }
    this.pipeTo(transform.writable, options).catch(() => {});
    return transform.readable;
  }
  static from(iterable) {
    const it = iterable[Symbol.asyncIterator] ? iterable[Symbol.asyncIterator]() : iterable[Symbol.iterator] ? iterable[Symbol.iterator]() : null;
    if (!it) throw new TypeError('ReadableStream.from: the argument must be iterable');
    return new ReadableStream({
      async pull(c) { const { value, done } = await it.next(); if (done) c.close(); else c.enqueue(await value); },
      async cancel(reason) { if (typeof it.return === 'function') await it.return(reason); },
    });
  }
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

class WritableStream {
  constructor(sink = {}) {
    const st = { sink, writer: null, state: 'writable', error: undefined, chain: Promise.resolve() };
    this[$] = st;
    st.controller = { error: (e) => { if (st.state === 'writable') { st.state = 'errored'; st.error = e; } }, signal: new AbortController().signal };
    if (typeof sink.start === 'function') st.chain = Promise.resolve(sink.start(st.controller));
  }
  get locked() { return this[$].writer !== null; }
  getWriter() {
    if (this.locked) throw new TypeError('WritableStream is locked');
    const st = this[$];
    const stream = this;
    const queue = (fn) => {
      const next = st.chain.then(() => {
        if (st.state === 'errored') throw st.error;
        return fn();
      });
      st.chain = next.catch((e) => { if (st.state === 'writable') { st.state = 'errored'; st.error = e; } });
      return next;
    };
    const writer = {
      get desiredSize() { return st.state === 'writable' ? 1 : st.state === 'closed' ? 0 : null; },
      get ready() { return st.chain.then(() => undefined); },
      get closed() { return st.chain.then(() => { if (st.state === 'errored') throw st.error; }); },
      write(chunk) {
        if (st.writer !== writer) return Promise.reject(new TypeError('the writer was released'));
        if (st.state === 'closing' || st.state === 'closed') return Promise.reject(new TypeError('WritableStream is closed'));
        return queue(() => (typeof st.sink.write === 'function' ? st.sink.write(chunk, st.controller) : undefined)).then(() => undefined);
      },
      close() {
        if (st.state === 'closing' || st.state === 'closed') return Promise.reject(new TypeError('WritableStream is closed'));
        if (st.state === 'writable') st.state = 'closing';
        return queue(async () => { if (typeof st.sink.close === 'function') await st.sink.close(); st.state = 'closed'; });
      },
      abort(reason) { return stream.abort(reason); },
      releaseLock() { if (st.writer === writer) st.writer = null; },
    };
    st.writer = writer;
    return writer;
  }
  async abort(reason) {
    const st = this[$];
    if (st.state === 'closed' || st.state === 'errored') return;
    st.state = 'errored';
    st.error = reason;
    if (typeof st.sink.abort === 'function') await st.sink.abort(reason);
  }
  async close() {
    if (this.locked) throw new TypeError('WritableStream is locked');
    const w = this.getWriter();
    try { await w.close(); } finally { w.releaseLock(); }
  }
}

class TransformStream {
  constructor(transformer = {}) {
    let readableController;
    const readable = new ReadableStream({ start(c) { readableController = c; } });
    const controller = {
      enqueue: (chunk) => readableController.enqueue(chunk),
      error: (e) => readableController.error(e),
      terminate: () => readableController.close(),
      get desiredSize() { return readableController.desiredSize; },
    };
    const started = Promise.resolve(typeof transformer.start === 'function' ? transformer.start(controller) : undefined);
    const writable = new WritableStream({
      write: async (chunk) => {
        await started;
        if (typeof transformer.transform === 'function') await transformer.transform(chunk, controller);
        else controller.enqueue(chunk);
      },
      close: async () => {
        await started;
        if (typeof transformer.flush === 'function') await transformer.flush(controller);
        readableController.close();
      },
      abort: (reason) => readableController.error(reason),
    });
    this[$] = { readable, writable };
  }
  get readable() { return this[$].readable; }
  get writable() { return this[$].writable; }
}

export { ReadableStream, WritableStream, TransformStream };
