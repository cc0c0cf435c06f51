// DOMException, Event, CustomEvent, EventTarget (the DOM Standard's, without a tree: no bubbling or capture
// phases, since a guest has no DOM; the capture flag still tells listeners apart, as the standard says).
import { $ } from './internal.js';

const DOM_CODES = {
  IndexSizeError: 1, HierarchyRequestError: 3, WrongDocumentError: 4, InvalidCharacterError: 5, NoModificationAllowedError: 7,
  NotFoundError: 8, NotSupportedError: 9, InvalidStateError: 11, SyntaxError: 12, InvalidModificationError: 13,
  NamespaceError: 14, InvalidAccessError: 15, TypeMismatchError: 17, SecurityError: 18, NetworkError: 19, AbortError: 20,
  URLMismatchError: 21, QuotaExceededError: 22, TimeoutError: 23, InvalidNodeTypeError: 24, DataCloneError: 25,
};

class DOMException extends Error {
  constructor(message = '', name = 'Error') {
    super(message);
    Object.defineProperty(this, 'name', { value: String(name), configurable: true, writable: true });
  }
  get code() { return DOM_CODES[this.name] ?? 0; }
}
for (const [name, code] of Object.entries(DOM_CODES)) {
  const constant = name.replace(/Error$/, '').replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase() + '_ERR';
  Object.defineProperty(DOMException, constant, { value: code, enumerable: true });
  Object.defineProperty(DOMException.prototype, constant, { value: code, enumerable: true });
}

class Event {
  constructor(type, init = {}) {
    if (arguments.length === 0) throw new TypeError('The "type" argument must be specified');
    this[$] = {
      type: String(type), bubbles: !!init.bubbles, cancelable: !!init.cancelable, composed: !!init.composed,
      target: null, currentTarget: null, defaultPrevented: false, stop: false, stopImmediate: false, dispatching: false,
      timeStamp: typeof performance === 'object' ? performance.now() : 0,
    };
  }
  get type() { return this[$].type; }
  get bubbles() { return this[$].bubbles; }
  get cancelable() { return this[$].cancelable; }
  get composed() { return this[$].composed; }
  get target() { return this[$].target; }
  get currentTarget() { return this[$].currentTarget; }
  get srcElement() { return this[$].target; }
  get defaultPrevented() { return this[$].defaultPrevented; }
  get returnValue() { return !this[$].defaultPrevented; }
  get eventPhase() { return this[$].dispatching ? Event.AT_TARGET : Event.NONE; }
  get isTrusted() { return false; }
  get timeStamp() { return this[$].timeStamp; }
  get cancelBubble() { return this[$].stop; }
  set cancelBubble(v) { if (v) this[$].stop = true; }
  composedPath() { return this[$].dispatching && this[$].currentTarget ? [this[$].currentTarget] : []; }
  preventDefault() { if (this[$].cancelable) this[$].defaultPrevented = true; }
  stopPropagation() { this[$].stop = true; }
  stopImmediatePropagation() { this[$].stop = true; this[$].stopImmediate = true; }
}
for (const [k, v] of Object.entries({ NONE: 0, CAPTURING_PHASE: 1, AT_TARGET: 2, BUBBLING_PHASE: 3 })) {
  Object.defineProperty(Event, k, { value: v, enumerable: true });
  Object.defineProperty(Event.prototype, k, { value: v, enumerable: true });
}

class CustomEvent extends Event {
  constructor(type, init = {}) {
    super(type, init);
    this[$].detail = init.detail === undefined ? null : init.detail;
  }
  get detail() { return this[$].detail; }
}

const flags = (options) => (typeof options === 'boolean' ? { capture: options } : options && typeof options === 'object' ? options : {});

class EventTarget {
  constructor() {
    Object.defineProperty(this, $, { value: { listeners: new Map() }, writable: true });
  }
  addEventListener(type, callback, options) {
    if (callback === null || callback === undefined) return;
    // The DOM's EventListener: a function or an object (with handleEvent); anything else is a TypeError, as in Node.
    if (typeof callback !== 'function' && typeof callback !== 'object') throw new TypeError(`addEventListener: the listener must be a function or an object, not ${typeof callback}`);
    const o = flags(options);
    const signal = o.signal;
    if (signal && signal.aborted) return;
    const key = String(type), capture = !!o.capture;
    const list = this[$].listeners.get(key) ?? [];
    if (list.some((l) => l.callback === callback && l.capture === capture)) return;
    const listener = { callback, capture, once: !!o.once, passive: !!o.passive, removed: false };
    list.push(listener);
    this[$].listeners.set(key, list);
    if (signal) signal.addEventListener('abort', () => this.removeEventListener(key, callback, { capture }), { once: true });
  }
  removeEventListener(type, callback, options) {
    const key = String(type), capture = !!flags(options).capture;
    const list = this[$].listeners.get(key);
    if (!list) return;
    const i = list.findIndex((l) => l.callback === callback && l.capture === capture);
    if (i < 0) return;
    list[i].removed = true;
    list.splice(i, 1);
  }
  dispatchEvent(event) {
    if (!(event instanceof Event)) throw new TypeError('The "event" argument must be an instance of Event');
    const st = event[$];
    if (st.dispatching) throw new DOMException('The event is already being dispatched', 'InvalidStateError');
    st.dispatching = true;
    st.target = this;
    st.currentTarget = this;
    try {
      const handler = this['on' + st.type];
      const list = [...(this[$].listeners.get(st.type) ?? [])];
      if (typeof handler === 'function' && !list.some((l) => l.callback === handler)) list.unshift({ callback: handler, once: false, removed: false, capture: false });
      for (const l of list) {
        if (l.removed) continue;
        if (l.once) this.removeEventListener(st.type, l.callback, { capture: l.capture });
        try {
          if (typeof l.callback === 'function') l.callback.call(this, event);
          else if (l.callback && typeof l.callback.handleEvent === 'function') l.callback.handleEvent(event);
        } catch (e) {
          reportError(e);
        }
        if (st.stopImmediate) break;
      }
    } finally {
      st.dispatching = false;
      st.currentTarget = null;
    }
    return !st.defaultPrevented;
  }
}

/** An exception from a listener does not stop the dispatch: it is reported, as an uncaught error is. */
function reportError(e) {
  const text = e instanceof Error ? `${e.name}: ${e.message}${e.stack ? '\n' + e.stack : ''}` : String(e);
  if (typeof console === 'object') console.error(`Uncaught ${text}`);
}

export { DOMException, Event, CustomEvent, EventTarget, reportError };
