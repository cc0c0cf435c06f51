// DOMException, Event, EventTarget.
import { $ } from './internal.js';

class DOMException extends Error {
  constructor(message = '', name = 'Error') {
    super(message);
    Object.defineProperty(this, 'name', { value: name, configurable: true, writable: true });
  }
}
class Event {
  constructor(type) { this.type = String(type); this.target = null; this.defaultPrevented = false; }
  preventDefault() { this.defaultPrevented = true; }
}
class EventTarget {
  constructor() { Object.defineProperty(this, $, { value: { listeners: new Map() }, writable: true }); }
  addEventListener(type, fn, opts) {
    if (typeof fn !== 'function') return;
    const list = this[$].listeners.get(type) ?? [];
    if (!list.some((l) => l.fn === fn)) list.push({ fn, once: !!(opts && opts.once) });
    this[$].listeners.set(type, list);
  }
  removeEventListener(type, fn) {
    const list = this[$].listeners.get(type);
    if (list) this[$].listeners.set(type, list.filter((l) => l.fn !== fn));
  }
  dispatchEvent(event) {
    event.target = this;
    const handler = this['on' + event.type];
    if (typeof handler === 'function') handler.call(this, event);
    for (const l of [...(this[$].listeners.get(event.type) ?? [])]) {
      if (l.once) this.removeEventListener(event.type, l.fn);
      l.fn.call(this, event);
    }
    return !event.defaultPrevented;
  }
}

export { DOMException, Event, EventTarget };
