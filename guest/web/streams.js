// ReadableStream, WritableStream and TransformStream: the Streams Standard's shapes and states — queuing
// strategies (highWaterMark, size) and the desiredSize they give, a source pulled until its queue is full,
// readers' and writers' `closed` and `ready` promises — without byte streams or BYOB readers; piping, tee and
// ReadableStream.from. A stream's state only moves forward: readable → closed or errored; writable → closed or
// errored.
import { $ } from './internal.js';
import { AbortController } from './abort.js';

/** A settled-later promise with its resolvers; `handled`: a rejection nobody listens to is not reported (the
 *  standard marks readers' and writers' closed and ready promises so). */
function deferred(handled) {
  let resolve, reject;
  const promise = new Promise((res, rej) => { resolve = res; reject = rej; });
  if (handled) promise.catch(() => {});
  return { promise, resolve, reject };
}
const rejected = (e) => { const d = deferred(true); d.reject(e); return d; };
const resolved = () => { const d = deferred(true); d.resolve(); return d; };

/** A queuing strategy's highWaterMark and size (the standard's ExtractHighWaterMark and ExtractSizeAlgorithm). */
function strategyOf(strategy, defaultHwm) {
  const hwm = strategy == null || strategy.highWaterMark === undefined ? defaultHwm : Number(strategy.highWaterMark);
  if (Number.isNaN(hwm) || hwm < 0) throw new RangeError(`Invalid highWaterMark: ${strategy.highWaterMark}`);
  const size = strategy == null ? undefined : strategy.size;
  if (size !== undefined && typeof size !== 'function') throw new TypeError('The strategy\'s size must be a function');
  return { hwm, size: size === undefined ? () => 1 : (chunk) => size(chunk) };
}

class CountQueuingStrategy {
  constructor(init) { this[$] = Number(init?.highWaterMark); }
  get highWaterMark() { return this[$]; }
  get size() { return () => 1; }
}
class ByteLengthQueuingStrategy {
  constructor(init) { this[$] = Number(init?.highWaterMark); }
  get highWaterMark() { return this[$]; }
  get size() { return (chunk) => chunk.byteLength; }
}

class ReadableStream {
  constructor(source = {}, strategy = {}) {
    const { hwm, size } = strategyOf(strategy, 1);
    // state: 'readable' | 'closed' | 'errored'; closeRequested: close() was called and the queue is draining.
    const st = { queue: [], total: 0, hwm, size, state: 'readable', closeRequested: false, disturbed: false, error: undefined, waiters: [], reads: 0, reader: null, source, started: false, pulling: false, pullAgain: false };
    this[$] = st;
    st.wake = () => { const ws = st.waiters; st.waiters = []; for (const w of ws) w(); };
    st.desiredSize = () => (st.state === 'errored' ? null : st.state === 'closed' ? 0 : st.hwm - st.total);
    st.finish = () => { st.state = 'closed'; if (st.reader) st.reader[$].closed.resolve(); st.wake(); };
    // The standard's CallPullIfNeeded: pull while a read waits or the queue is below its high-water mark.
    st.pullIfNeeded = () => {
      if (!st.started || st.state !== 'readable' || st.closeRequested || typeof st.source.pull !== 'function') return;
      if (!(st.reads > 0 || st.desiredSize() > 0)) return;
      if (st.pulling) { st.pullAgain = true; return; }
      st.pulling = true;
      Promise.resolve().then(() => st.source.pull(st.controller)).then(() => {
        st.pulling = false;
        if (st.pullAgain) { st.pullAgain = false; st.pullIfNeeded(); }
      }, (e) => { st.pulling = false; st.controller.error(e); });
    };
    st.controller = {
      enqueue: (chunk) => {
        if (st.closeRequested || st.state !== 'readable') throw new TypeError('ReadableStream is closed');
        let n;
        try { n = Number(st.size(chunk)); } catch (e) { st.controller.error(e); throw e; }
        if (Number.isNaN(n) || n < 0 || n === Infinity) { const e = new RangeError('The chunk\'s size must be a finite, non-negative number'); st.controller.error(e); throw e; }
        st.queue.push([chunk, n]);
        st.total += n;
        st.wake();
        st.pullIfNeeded();
      },
      close: () => {
        if (st.closeRequested || st.state !== 'readable') throw new TypeError('ReadableStream is already closed');
        st.closeRequested = true;
        if (st.queue.length === 0) st.finish();
      },
      error: (e) => {
        if (st.state !== 'readable') return;
        st.state = 'errored';
        st.error = e === undefined ? new TypeError('stream errored') : e;
        st.queue = [];
        st.total = 0;
        if (st.reader) st.reader[$].closed.reject(st.error);
        st.wake();
      },
      get desiredSize() { return st.desiredSize(); },
    };
    const started = typeof source.start === 'function' ? source.start(st.controller) : undefined;
    Promise.resolve(started).then(() => { st.started = true; st.pullIfNeeded(); }, (e) => st.controller.error(e));
  }
  get locked() { return this[$].reader !== null; }
  getReader() {
    if (this.locked) throw new TypeError('ReadableStream is locked');
    const st = this[$];
    const reader = new ReadableStreamDefaultReader(this, st);
    st.reader = reader;
    return reader;
  }
  cancel(reason, fromReader) {
    const st = this[$];
    if (this.locked && !fromReader) return Promise.reject(new TypeError('ReadableStream is locked'));
    st.disturbed = true;
    if (st.state === 'closed') return Promise.resolve();
    if (st.state === 'errored') return Promise.reject(st.error);
    st.queue = [];
    st.total = 0;
    st.finish();
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
      }, { highWaterMark: 0 });
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
    }, { highWaterMark: 0 });
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

/** A stream's one reader: reads take chunks off the queue in order; `closed` settles with the stream. */
class ReadableStreamDefaultReader {
  constructor(stream, st) {
    this[$] = { st, stream, closed: st.state === 'closed' ? resolved() : st.state === 'errored' ? rejected(st.error) : deferred(true) };
  }
  get closed() { return this[$].closed.promise; }
  async read() {
    const { st } = this[$];
    st.disturbed = true;
    for (;;) {
      if (st.reader !== this) throw new TypeError('the reader was released');
      if (st.queue.length) {
        const [value, n] = st.queue.shift();
        st.total -= n;
        if (st.closeRequested && st.queue.length === 0) st.finish();
        else st.pullIfNeeded();
        return { value, done: false };
      }
      if (st.state === 'errored') throw st.error;
      if (st.state === 'closed') return { value: undefined, done: true };
      st.reads++;
      try {
        const woken = new Promise((resolve) => st.waiters.push(resolve));
        st.pullIfNeeded();
        await woken;
      } finally {
        st.reads--;
      }
    }
  }
  // A read still pending rejects with a TypeError (the Streams Standard since 2022, and Node), and so does
  // `closed` from then on.
  releaseLock() {
    const { st } = this[$];
    if (st.reader !== this) return;
    st.reader = null;
    const e = new TypeError('the reader was released');
    this[$].closed.reject(e);
    this[$].closed = rejected(e);
    st.wake();
  }
  cancel(reason) {
    const { st, stream } = this[$];
    if (st.reader !== this) return Promise.reject(new TypeError('the reader was released'));
    return stream.cancel(reason, true);
  }
}

/** The standard's writable stream: writes queue (their sizes counted against the high-water mark: desiredSize,
 *  and `ready` pending while it is not above 0) and reach the sink one at a time, in order; close waits for
 *  them; an error or abort rejects what is queued and the writer's promises. */
class WritableStream {
  constructor(sink = {}, strategy = {}) {
    const { hwm, size } = strategyOf(strategy, 1);
    const aborter = new AbortController();
    // state: 'writable' | 'closed' | 'errored'; queue: [chunk, size, deferred], or [CLOSE, 0, deferred].
    const st = { sink, writer: null, state: 'writable', error: undefined, queue: [], total: 0, hwm, size, busy: false, closeRequested: false, started: false, aborter };
    this[$] = st;
    st.desiredSize = () => (st.state === 'errored' ? null : st.state === 'closed' ? 0 : st.hwm - st.total);
    st.backpressure = () => st.state === 'writable' && !st.closeRequested && st.desiredSize() <= 0;
    st.controller = { error: (e) => { if (st.state === 'writable') fail(st, e); }, signal: aborter.signal };
    const started = typeof sink.start === 'function' ? sink.start(st.controller) : undefined;
    Promise.resolve(started).then(() => { st.started = true; advance(st); }, (e) => fail(st, e));
  }
  get locked() { return this[$].writer !== null; }
  getWriter() {
    if (this.locked) throw new TypeError('WritableStream is locked');
    const st = this[$];
    const writer = new WritableStreamDefaultWriter(this, st);
    st.writer = writer;
    return writer;
  }
  async abort(reason) {
    const st = this[$];
    if (st.state !== 'writable') return;
    st.aborter.abort(reason);
    fail(st, reason);
    if (typeof st.sink.abort === 'function') await st.sink.abort(reason);
  }
  async close() {
    if (this.locked) throw new TypeError('WritableStream is locked');
    const w = this.getWriter();
    try { await w.close(); } finally { w.releaseLock(); }
  }
}

const CLOSE = Symbol('close');

/** The ready promise follows backpressure: pending while the queue is full, resolved when it is not. */
function updateReady(st) {
  const w = st.writer;
  if (!w || st.state !== 'writable') return;
  const pressed = st.backpressure();
  if (pressed && w[$].readySettled) { w[$].ready = deferred(true); w[$].readySettled = false; }
  else if (!pressed && !w[$].readySettled) { w[$].ready.resolve(); w[$].readySettled = true; }
}
/** Hand the sink the next queued write, or the close once the writes before it are done. */
function advance(st) {
  if (!st.started || st.busy || st.state !== 'writable' || st.queue.length === 0) return;
  const [chunk, n, done] = st.queue[0];
  st.busy = true;
  const call = chunk === CLOSE ? () => (typeof st.sink.close === 'function' ? st.sink.close() : undefined)
    : () => (typeof st.sink.write === 'function' ? st.sink.write(chunk, st.controller) : undefined);
  Promise.resolve().then(call).then(() => {
    st.busy = false;
    done.resolve(); // a write the sink took resolves, even when the stream errored meanwhile
    if (st.state !== 'writable') return;
    st.queue.shift();
    st.total -= n;
    if (chunk === CLOSE) {
      st.state = 'closed';
      if (st.writer) st.writer[$].closed.resolve();
      return;
    }
    updateReady(st);
    advance(st);
  }, (e) => {
    st.busy = false;
    if (st.state === 'writable') st.queue.shift();
    done.reject(e);
    fail(st, e);
  });
}
/** The stream errors: what is queued rejects, and the writer's ready and closed with it. */
function fail(st, e) {
  if (st.state !== 'writable') return;
  st.state = 'errored';
  st.error = e;
  for (const [, , done] of st.queue.splice(st.busy ? 1 : 0)) done.reject(e);
  st.total = 0;
  const w = st.writer;
  if (w) {
    w[$].ready.reject(e);
    if (w[$].readySettled) w[$].ready = rejected(e);
    w[$].readySettled = true;
    w[$].closed.reject(e);
  }
}

class WritableStreamDefaultWriter {
  constructor(stream, st) {
    const ready = st.state === 'errored' ? rejected(st.error) : resolved();
    this[$] = { st, stream, ready, readySettled: true, closed: st.state === 'closed' ? resolved() : st.state === 'errored' ? rejected(st.error) : deferred(true) };
    st.writer = this;
    updateReady(st);
  }
  get desiredSize() {
    const { st } = this[$];
    if (st.writer !== this) throw new TypeError('the writer was released');
    return st.desiredSize();
  }
  get ready() { return this[$].ready.promise; }
  get closed() { return this[$].closed.promise; }
  write(chunk) {
    const { st } = this[$];
    if (st.writer !== this) return Promise.reject(new TypeError('the writer was released'));
    if (st.state === 'errored') return Promise.reject(st.error);
    if (st.closeRequested || st.state === 'closed') return Promise.reject(new TypeError('WritableStream is closed'));
    let n;
    try { n = Number(st.size(chunk)); } catch (e) { fail(st, e); return Promise.reject(e); }
    const done = deferred(false);
    st.queue.push([chunk, n, done]);
    st.total += n;
    updateReady(st);
    advance(st);
    return done.promise;
  }
  close() {
    const { st } = this[$];
    if (st.writer !== this) return Promise.reject(new TypeError('the writer was released'));
    if (st.state === 'errored') return Promise.reject(st.error);
    if (st.closeRequested || st.state === 'closed') return Promise.reject(new TypeError('WritableStream is closed'));
    st.closeRequested = true;
    const done = deferred(false);
    st.queue.push([CLOSE, 0, done]);
    updateReady(st);
    advance(st);
    return done.promise;
  }
  abort(reason) {
    const { st, stream } = this[$];
    if (st.writer !== this) return Promise.reject(new TypeError('the writer was released'));
    return stream.abort(reason);
  }
  releaseLock() {
    const { st } = this[$];
    if (st.writer !== this) return;
    const e = new TypeError('the writer was released');
    this[$].ready.reject(e);
    this[$].ready = rejected(e);
    this[$].closed.reject(e);
    this[$].closed = rejected(e);
    st.writer = null;
  }
}

class TransformStream {
  constructor(transformer = {}) {
    let readableController;
    // The readable side's high-water mark is 0, as in the standard: its desiredSize is 0 until a read waits.
    const readable = new ReadableStream({ start(c) { readableController = c; } }, { highWaterMark: 0 });
    // terminate() and the close after flush both close the readable side; whichever comes second does nothing.
    const closeReadable = () => { const rs = readable[$]; if (rs.state === 'readable' && !rs.closeRequested) readableController.close(); };
    const controller = {
      enqueue: (chunk) => readableController.enqueue(chunk),
      error: (e) => readableController.error(e),
      terminate: closeReadable,
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
        closeReadable();
      },
      abort: (reason) => readableController.error(reason),
    });
    this[$] = { readable, writable };
  }
  get readable() { return this[$].readable; }
  get writable() { return this[$].writable; }
}

export { ByteLengthQueuingStrategy, CountQueuingStrategy, ReadableStream, WritableStream, TransformStream };
