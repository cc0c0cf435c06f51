// AbortController and AbortSignal.
import { $ } from './internal.js';
import { DOMException, Event, EventTarget } from './events.js';

class AbortSignal extends EventTarget {
  constructor(key) {
    if (key !== $) throw new TypeError('AbortSignal cannot be constructed; use AbortController');
    super();
    this[$].aborted = false;
    this[$].reason = undefined;
    this.onabort = null;
  }
  get aborted() { return this[$].aborted; }
  get reason() { return this[$].reason; }
  throwIfAborted() { if (this[$].aborted) throw this[$].reason; }
  _abort(reason) {
    if (this[$].aborted) return;
    this[$].aborted = true;
    this[$].reason = reason === undefined ? new DOMException('This operation was aborted', 'AbortError') : reason;
    this.dispatchEvent(new Event('abort'));
  }
  static abort(reason) { const s = new AbortSignal($); s._abort(reason); return s; }
  static timeout(ms) {
    // Node's check: an integer from 0 to 2^32 - 1 (a number of another kind is a TypeError, as in Node).
    if (typeof ms !== 'number') throw new TypeError('The "delay" argument must be of type number');
    if (!Number.isInteger(ms) || ms < 0 || ms > 0xffffffff) throw new RangeError(`The value of "delay" is out of range. It must be >= 0 and <= 4294967295. Received ${ms}`);
    const s = new AbortSignal($);
    setTimeout(() => s._abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), ms);
    return s;
  }
  static any(signals) {
    const s = new AbortSignal($);
    for (const x of signals) { if (x.aborted) { s._abort(x.reason); return s; } }
    for (const x of signals) x.addEventListener('abort', () => s._abort(x.reason), { once: true });
    return s;
  }
}
Object.defineProperty(AbortSignal.prototype, '_abort', { enumerable: false });
class AbortController {
  constructor() { this[$] = new AbortSignal($); }
  get signal() { return this[$]; }
  abort(reason) { this[$]._abort(reason); }
}

export { AbortSignal, AbortController };
