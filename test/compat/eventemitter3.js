// eventemitter3: listeners with context, once, removal, counts and event names.
import EventEmitter from 'eventemitter3';
import { tool } from './_tool.js';

export const args = {};
export function run() {
  const e = new EventEmitter();
  const log = [];
  const ctx = { name: 'ctx' };
  function named(x) { log.push(`${this.name}:${x}`); }
  e.on('a', named, ctx);
  e.once('a', (x) => log.push(`once:${x}`));
  e.on('b', (...xs) => log.push(`b:${xs.join(',')}`));
  e.on(Symbol.for('s'), () => log.push('symbol'));
  const r1 = e.emit('a', 1);
  e.emit('a', 2);
  e.emit('b', 1, 2, 3, 4, 5, 6);
  e.emit(Symbol.for('s'));
  const counts = [e.listenerCount('a'), e.listenerCount('b')];
  e.off('a', named, ctx);
  const r2 = e.emit('a', 3);
  const names = e.eventNames().map(String);
  e.removeAllListeners();
  return { log, r1, r2, counts, names, after: e.eventNames().length, prefixed: EventEmitter.prefixed };
}
tool('eventemitter3', run);
