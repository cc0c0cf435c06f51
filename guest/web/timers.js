// Node's timers: setTimeout, setInterval and setImmediate, their clear functions, and the Timeout and
// Immediate objects they return (ref, unref, hasRef, Symbol.dispose; a Timeout also refresh, close, and its id
// as a number through Symbol.toPrimitive, which clearTimeout takes as well as the object, as Node's does).
//
// The timers live here, in the guest's own memory, not on the host: a min-heap by due time (then by the order
// they were set), and a queue of immediates. The host holds at most two of them at once, as two ops: one
// runtime.sleep for the earliest due timer, one runtime.sleep(0) (the host's next turn) while immediates wait.
// So a guest may have as many timers as its memory holds, like Node (an lru-cache with ttlAutopurge, a
// thousand AbortSignal.timeout), and none of them takes one of its 1,024 operations in flight.
// When the host wakes the guest, the timers that are due run in order, each as the invocation that set it,
// with the microtasks each one queued run before the next (as Node does); an immediate set meanwhile waits
// for the next turn. A callback's exception is reported as uncaught, and the call goes on.
// ref and unref change only hasRef(): a guest timer keeps nothing alive. Like every op, the host's wake-ups
// do not outlive the calls: with no call in flight the host drops them, and the guest forgets its timers
// (timersIdle).
import { host } from './internal.js';

const state = new WeakMap(); // Timeout | Immediate -> its record
const scheduled = new Map(); // id -> the Timeout or Immediate, while it waits
let nextId = 1;
let nextSeq = 1;

// Node's rule for a delay: 1 to 2^31 - 1 ms; anything else (0, negative, NaN, Infinity, past the maximum) is 1.
const TIMEOUT_MAX = 0x7fffffff;
const delayOf = (ms) => { const n = ms * 1; return n >= 1 && n <= TIMEOUT_MAX ? n : 1; };
const now = () => host.native.nowMs();

// ---- the heap of timers: entries { rec, due, seq }; a cleared or refreshed timer's entry is left in place,
// dead (rec.entry no longer points at it), and skipped; past as many dead entries as live ones it is rebuilt.
let heap = [];
let dead = 0;
const before = (a, b) => a.due < b.due || (a.due === b.due && a.seq < b.seq);
function up(i) {
  const e = heap[i];
  while (i > 0) {
    const p = (i - 1) >> 1;
    if (!before(e, heap[p])) break;
    heap[i] = heap[p];
    i = p;
  }
  heap[i] = e;
}
function down(i) {
  const e = heap[i], n = heap.length;
  for (;;) {
    let c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && before(heap[c + 1], heap[c])) c++;
    if (!before(heap[c], e)) break;
    heap[i] = heap[c];
    i = c;
  }
  heap[i] = e;
}
function pop() {
  const top = heap[0], last = heap.pop();
  if (heap.length) { heap[0] = last; down(0); }
  return top;
}
/** The earliest live entry, dropping dead ones from the top. */
function first() {
  while (heap.length && heap[0].rec.entry !== heap[0]) { pop(); dead--; }
  return heap[0];
}
function schedule(rec, due) {
  const entry = { rec, due, seq: nextSeq++ };
  rec.entry = entry;
  heap.push(entry);
  up(heap.length - 1);
}
function unschedule(rec) {
  if (!rec.entry) return;
  rec.entry = null;
  if (++dead > 64 && dead > heap.length - dead) {
    heap = heap.filter((e) => e.rec.entry === e);
    for (let i = (heap.length >> 1) - 1; i >= 0; i--) down(i);
    dead = 0;
  }
}

// ---- the host's wake-ups ------------------------------------------------------------------------------
let wake = { op: 0, due: Infinity }; // the host timer armed for the earliest timer
let turn = 0; // the host turn asked for the immediates
let immediates = []; // records; a cleared one stays, not queued, until the turn or a compaction
let clearedImmediates = 0;

function sleep(ms, onWake) {
  const op = host.native.sleep(ms);
  if (op === 0) throw new RangeError('the host refused a timer: this guest already has 16 host timers pending');
  host.pending.set(op, { inv: host.current(), resolve: onWake, reject: () => {}, timer: true });
  return op;
}
function dropWake() {
  if (wake.op === 0) return;
  host.pending.delete(wake.op);
  host.native.clearTimer(wake.op);
  wake = { op: 0, due: Infinity };
}
/** Make the host wake the guest in time for its earliest timer (a wake-up already due sooner stays). */
function rearm() {
  const e = first();
  if (!e) return dropWake();
  if (wake.op !== 0 && wake.due <= e.due) return;
  const due = e.due;
  // The new wake-up first: when the host refuses it (1,024 operations in flight), the one armed stays.
  const op = sleep(Math.max(1, Math.ceil(due - now())), () => { if (wake.op === op) { wake = { op: 0, due: Infinity }; runDue(); } });
  dropWake();
  wake = { op, due };
}

/** Run one timer's or immediate's callback as the invocation that set it, then the microtasks it queued. */
function run(rec) {
  host.setCurrent(rec.inv);
  try { rec.fn(...rec.args); } catch (e) { host.uncaught(e); }
  host.native.drainJobs();
}

function runDue() {
  const t = now();
  for (let e = first(); e && e.due <= t; e = first()) {
    const rec = e.rec;
    pop();
    rec.entry = null;
    if (rec.repeat) schedule(rec, t + rec.delay);
    else scheduled.delete(rec.id);
    run(rec);
  }
  try { rearm(); } catch (e) { host.uncaught(e); } // refused: the next timer set, or the next call's, arms it
}

function runImmediates() {
  turn = 0;
  const batch = immediates; // what is set while these run waits for the next turn, as in Node
  immediates = [];
  clearedImmediates = 0;
  for (const rec of batch) {
    if (!rec.queued) continue;
    rec.queued = false;
    scheduled.delete(rec.id);
    run(rec);
  }
  if (immediates.length && turn === 0) {
    try { turn = sleep(0, runImmediates); } catch (e) { host.uncaught(e); }
  }
}

// ---- the API ----------------------------------------------------------------------------------------
function invalidCallback(fn) {
  const e = new TypeError(`The "callback" argument must be of type function. Received ${fn === null ? 'null' : typeof fn}`);
  e.code = 'ERR_INVALID_ARG_TYPE';
  return e;
}

function start(timer, fn, args, delay, repeat) {
  if (typeof fn !== 'function') throw invalidCallback(fn);
  const rec = { id: nextId++, fn, args, delay, repeat, refed: true, cleared: false, entry: null, queued: false, inv: host.current() };
  state.set(timer, rec);
  schedule(rec, now() + delay);
  try { rearm(); } catch (e) { unschedule(rec); throw e; }
  scheduled.set(rec.id, timer);
  return timer;
}

function clear(timer, Kind) {
  const t = typeof timer === 'number' || typeof timer === 'string' ? scheduled.get(Number(timer)) : timer;
  const rec = t instanceof Kind ? state.get(t) : undefined;
  if (!rec) return;
  rec.cleared = true;
  if (rec.queued) {
    rec.queued = false;
    // set-and-clear in a loop: past as many cleared as queued, the queue keeps only what is queued
    if (++clearedImmediates > 64 && clearedImmediates > immediates.length >> 1) {
      immediates = immediates.filter((r) => r.queued);
      clearedImmediates = 0;
    }
  }
  unschedule(rec);
  scheduled.delete(rec.id);
}

class Immediate {
  ref() { const r = state.get(this); if (r) r.refed = true; return this; }
  unref() { const r = state.get(this); if (r) r.refed = false; return this; }
  hasRef() { const r = state.get(this); return r ? r.refed : false; }
  [Symbol.dispose]() { clear(this, Immediate); }
}

// A Timeout has an Immediate's methods and more; clearImmediate clears either, and clearTimeout only a Timeout.
class Timeout extends Immediate {
  /** Start the timer again with its delay, from now; after it fired too (not after it was cleared). */
  refresh() {
    const rec = state.get(this);
    if (rec && !rec.cleared) {
      unschedule(rec);
      schedule(rec, now() + rec.delay);
      scheduled.set(rec.id, this);
      rec.inv = host.current();
      rearm();
    }
    return this;
  }
  close() { clear(this, Timeout); return this; }
  [Symbol.dispose]() { clear(this, Timeout); }
  [Symbol.toPrimitive]() { const r = state.get(this); return r ? r.id : NaN; }
}

export const setTimeout = (fn, ms, ...args) => start(new Timeout(), fn, args, delayOf(ms), false);
export const setInterval = (fn, ms, ...args) => start(new Timeout(), fn, args, delayOf(ms), true);
export const clearTimeout = (timer) => clear(timer, Timeout);
export const clearImmediate = (timer) => clear(timer, Immediate);

export function setImmediate(fn, ...args) {
  if (typeof fn !== 'function') throw invalidCallback(fn);
  const timer = new Immediate();
  const rec = { id: nextId++, fn, args, refed: true, cleared: false, entry: null, queued: true, inv: host.current() };
  if (turn === 0) turn = sleep(0, runImmediates);
  state.set(timer, rec);
  immediates.push(rec);
  scheduled.set(rec.id, timer);
  return timer;
}

/** No call is in flight: the host has dropped its wake-ups, and the guest forgets its timers. */
export function timersIdle() {
  if (heap.length === 0 && immediates.length === 0 && wake.op === 0 && turn === 0) return;
  for (const e of heap) if (e.rec.entry === e) e.rec.entry = null;
  for (const rec of immediates) rec.queued = false;
  heap = [];
  dead = 0;
  immediates = [];
  clearedImmediates = 0;
  scheduled.clear();
  wake = { op: 0, due: Infinity };
  turn = 0;
}
