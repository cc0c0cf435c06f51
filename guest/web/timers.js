// Node's timers: setTimeout, setInterval and setImmediate, their clear functions, and the Timeout and
// Immediate objects they return (ref, unref, hasRef; a Timeout also refresh, close, and its id as a number
// through Symbol.toPrimitive, which clearTimeout takes as well as the object, as Node's does).
//
// Each armed timer is one op of the host: runtime.sleep, whose 0 ms is the host's next turn (setImmediate;
// setTimeout asks for 1 ms at least, as Node's does). Its completion runs the callback as the invocation that
// set the timer. Clearing a timer tells the host (runtime.clear-timer), so a cleared timer holds no place
// among the guest's 1,024 operations in flight, and refresh replaces the host's timer instead of adding one.
// ref and unref change only hasRef(): a guest timer keeps nothing alive (like every op, it does not outlive
// the call that set it). An exception thrown by a callback is reported as uncaught, and the call goes on.
import { host } from './internal.js';

const state = new WeakMap(); // Timeout | Immediate -> { id, fn, args, delay, repeat, refed, cleared, op }
const armed = new Map(); // id -> the Timeout or Immediate whose host timer is pending
let nextId = 1;

// Node's rule for a delay: 1 to 2^31 - 1 ms; anything else (0, negative, NaN, Infinity, past the maximum) is 1.
const TIMEOUT_MAX = 0x7fffffff;
const delayOf = (ms) => { const n = ms * 1; return n >= 1 && n <= TIMEOUT_MAX ? n : 1; };

/** Drop the host's timer of `s`, if one is pending. */
function disarm(s) {
  if (s.op === 0) return;
  host.pending.delete(s.op);
  host.native.clearTimer(s.op);
  s.op = 0;
}

function arm(timer, s) {
  disarm(s); // refresh: the earlier host timer goes first, so a guest at its limit can still refresh
  const op = host.native.sleep(s.delay);
  if (op === 0) {
    armed.delete(s.id);
    throw new RangeError('too many timers and host operations pending in this guest (1024); await some first');
  }
  s.op = op;
  armed.set(s.id, timer);
  host.pending.set(op, { inv: host.current(), resolve: () => fire(timer, s), reject: () => {}, timer: true });
}

function fire(timer, s) {
  s.op = 0;
  if (s.repeat) {
    try { arm(timer, s); } catch (e) { host.uncaught(e); return; }
  } else {
    armed.delete(s.id);
  }
  try { s.fn(...s.args); } catch (e) { host.uncaught(e); }
}

function start(timer, fn, args, delay, repeat, what) {
  if (typeof fn !== 'function') throw new TypeError(`${what} needs a function`);
  const s = { id: nextId++, fn, args, delay, repeat, refed: true, cleared: false, op: 0 };
  state.set(timer, s);
  arm(timer, s);
  return timer;
}

function clear(timer, Kind) {
  const t = typeof timer === 'number' || typeof timer === 'string' ? armed.get(Number(timer)) : timer;
  const s = t instanceof Kind ? state.get(t) : undefined;
  if (!s) return;
  s.cleared = true;
  disarm(s);
  armed.delete(s.id);
}

class Immediate {
  ref() { const s = state.get(this); if (s) s.refed = true; return this; }
  unref() { const s = state.get(this); if (s) s.refed = false; return this; }
  hasRef() { const s = state.get(this); return s ? s.refed : false; }
}

// A Timeout has an Immediate's methods and more; clearImmediate clears either, as Node's does, and clearTimeout
// only a Timeout.
class Timeout extends Immediate {
  /** Start the timer again with its delay, from now; after it fired too (not after it was cleared). */
  refresh() {
    const s = state.get(this);
    if (s && !s.cleared) arm(this, s);
    return this;
  }
  close() { clear(this, Timeout); return this; }
  [Symbol.toPrimitive]() { const s = state.get(this); return s ? s.id : NaN; }
}

export const setTimeout = (fn, ms, ...args) => start(new Timeout(), fn, args, delayOf(ms), false, 'setTimeout');
export const setInterval = (fn, ms, ...args) => start(new Timeout(), fn, args, delayOf(ms), true, 'setInterval');
export const setImmediate = (fn, ...args) => start(new Immediate(), fn, args, 0, false, 'setImmediate');
export const clearTimeout = (timer) => clear(timer, Timeout);
export const clearImmediate = (timer) => clear(timer, Immediate);

/** No call is in flight: the host has dropped every timer, so none is armed any more. */
export function timersIdle() {
  for (const t of armed.values()) state.get(t).op = 0;
  armed.clear();
}
