// One page as a guest sees it: the request a `browser.call` op carries, the methods a guest may call on a page
// or a locator, what the page said and asked (console, dialogs), and how each call is carried out and
// answered. The session's context (context.ts) finds the page by its id and hands it here.
//
// Invariants:
//  - No Playwright object crosses the boundary: requests carry method names, JSON arguments, page ids and
//    locator chains (lists of [step, ...args]) that are rebuilt here on every call; answers are plain JSON or
//    bytes (`plain`), and a page.evaluate result is made JSON, and its size checked, in the page.
//  - Only the methods on the lists below are called, with plain JSON arguments; anything else is refused
//    by name.
//  - page.goto judges its target by the rule the gate applies to every request of the page (policy.ts
//    `pageRequestVerdict`): declared ∩ granted goes, a declared host the grant does not list is asked in mode
//    "ask", the rest is refused with the author's or the operator's refusal; a redirect that ends on a
//    refusal is a refusal, not a page.
import type { Locator, Page } from 'playwright-core';
import { KilnError, PermissionError } from '../../errors.js';
import type { GrantCheck } from '../../policy/grants.js';
import type { BrowserGate, Driver } from './gate.js';
import { browserUrlAllowed, hostOf, pageRequestVerdict } from './policy.js';

/** Page methods a guest may call, with plain JSON arguments. */
const PAGE_METHODS = new Set([
  'url', 'title', 'content', 'setContent', 'click', 'dblclick', 'fill', 'type', 'press', 'check', 'uncheck', 'selectOption',
  'hover', 'focus', 'waitForSelector', 'waitForURL', 'waitForLoadState', 'waitForTimeout', 'textContent', 'innerText',
  'innerHTML', 'getAttribute', 'inputValue', 'isVisible', 'isChecked', 'setViewportSize', 'goBack', 'reload',
]);
/** Steps of a locator chain, and what a chain may end with. */
const LOCATOR_STEPS = new Set(['locator', 'getByRole', 'getByText', 'getByLabel', 'getByTestId', 'getByPlaceholder', 'nth', 'first', 'last']);
const LOCATOR_METHODS = new Set([
  'click', 'dblclick', 'fill', 'type', 'press', 'check', 'uncheck', 'selectOption', 'hover', 'focus', 'textContent',
  'innerText', 'innerHTML', 'getAttribute', 'inputValue', 'isVisible', 'isChecked', 'count', 'allTextContents', 'waitFor',
]);
const MAX_CHAIN = 32;
const MAX_EVENTS = 200;
/** The largest viewport side a guest may ask for: a screenshot's memory grows with its square. */
const MAX_VIEWPORT = 4096;
/** The largest page.evaluate result, in characters of JSON (checked in the page). */
const MAX_EVALUATE_CHARS = 16 * 1024 * 1024;

export interface BrowserRequest {
  target: 'page' | 'context' | 'locator';
  method: string;
  args: unknown[];
  /** Which of the session's pages (0: its first page, made on first use). */
  page?: number;
  chain?: [string, ...unknown[]][];
  /** The guest has page.on listeners: answer { value, events } (PageEvents.fresh). */
  events?: boolean;
}

type PageEvent = { type: string; text: string } | { type: string; message: string };

/** What a page said (console) and asked (dialogs, dismissed at once): the newest MAX_EVENTS of each, for
 *  page.consoleMessages() and page.dialogs(), and how many of each were passed on (to page.on listeners, or
 *  over, when there were none). */
export class PageEvents {
  readonly list = { console: [] as PageEvent[], dialogs: [] as PageEvent[] };
  private total = { console: 0, dialogs: 0 };
  private given = { console: 0, dialogs: 0 };

  /** Listens to `page`: its console messages and its dialogs (each dismissed at once). */
  static of(page: Page): PageEvents {
    const ev = new PageEvents();
    page.on('console', (m) => ev.add('console', { type: m.type(), text: m.text().slice(0, 4096) }));
    page.on('dialog', (d) => {
      ev.add('dialogs', { type: d.type(), message: d.message().slice(0, 4096) });
      void d.dismiss().catch(() => {});
    });
    return ev;
  }

  add(kind: 'console' | 'dialogs', event: PageEvent): void {
    const list = this.list[kind];
    list.push(event);
    if (list.length > MAX_EVENTS) list.shift();
    this.total[kind]++;
  }

  /** The events since the last call (those still kept). */
  fresh(): { console: PageEvent[]; dialogs: PageEvent[] } {
    const since = (kind: 'console' | 'dialogs') => this.list[kind].slice(Math.max(0, this.list[kind].length - (this.total[kind] - this.given[kind])));
    const out = { console: since('console'), dialogs: since('dialogs') };
    this.given = { ...this.total };
    return out;
  }
}

/** The call driving the page, as far as its page calls go: its gate driver (the rule page.goto judges by) and
 *  the operator's grant check (for its refusals). */
export interface Driving {
  driver: Driver;
  grant?: GrantCheck;
}

/** One page call of `tool` (not a locator, not the context): `events` are the page's, `approve` the
 *  [approvals] check of a navigation. */
export async function pageCall(
  tool: string, page: Page, method: string, args: unknown[], gate: BrowserGate, call: Driving, events: PageEvents | undefined,
  approve?: (url: string) => Promise<void>,
): Promise<unknown> {
  switch (method) {
    case 'goto': {
      const url = String(args[0]);
      const { rule } = call.driver;
      // Not declared: the author's refusal; declared and not granted: the operator's.
      const refuse = (host: string) => {
        const declared = ['http', 'https'].some((sch) => browserUrlAllowed(`${sch}://${host}/`, rule.declared));
        return declared && rule.granted ? notGrantedRefusal(call.grant, host) : refusal(tool, host, rule.declared);
      };
      const verdict = pageRequestVerdict(url, rule);
      if (verdict.verdict === 'deny') throw verdict.by === 'grant' ? notGrantedRefusal(call.grant, verdict.host) : refusal(tool, verdict.host, rule.declared);
      // [policy] mode "ask": a declared host the grant does not list is put to a human, the same question
      // the gate asks for the page's own requests (asked once per call and host).
      if (verdict.verdict === 'ask') await gate.askFor(call.driver, verdict.host, url);
      await approve?.(url); // [approvals]: the page's own requests and redirects are judged by the rule above alone
      const before = gate.total;
      const refusedNow = () => {
        const host = gate.refused[gate.refused.length - 1] ?? hostOf(page.url());
        if (gate.total > before && gate.reasons[gate.reasons.length - 1] === 'private') {
          return new PermissionError(`${host} is or resolves to a private or loopback address, which the operator forbids ([net] denyPrivate)`);
        }
        return refuse(host);
      };
      let response;
      try {
        response = await page.goto(url, isObject(args[1]) ? pick(args[1], ['timeout', 'waitUntil']) : undefined);
      } catch (e) {
        // A refused https or wss tunnel is a network error to Chromium (ERR_TUNNEL_CONNECTION_FAILED): when the
        // gate refused something during this navigation, that refusal is the reason.
        if (gate.total > before && /ERR_TUNNEL_CONNECTION_FAILED/.test(String((e as Error)?.message))) throw refusedNow();
        throw e;
      }
      // A redirect to a refused host ends on the gate's 403 page: that is a refusal, not a page.
      if (pageRequestVerdict(page.url(), rule).verdict !== 'allow' || (response?.status() === 403 && gate.total > before)) {
        throw refusedNow();
      }
      return response ? { status: response.status(), url: response.url() } : null;
    }
    case 'evaluate': {
      // [source, isFunction, arg]: a function's source is called with the argument, in the page.
      const [source, isFunction, arg] = args;
      if (typeof source !== 'string') throw new KilnError('page.evaluate needs a function or a string');
      // The value is made JSON in the page and its size checked there, so a huge or cyclic one never
      // reaches the host as an object.
      const expr = isFunction ? `(${source})(${JSON.stringify(arg ?? null)})` : `(${source}\n)`;
      const text = await page.evaluate(`(async () => { const v = await ${expr}; const s = JSON.stringify(v === undefined ? null : v);
        if (s === undefined) return 'null'; if (s.length > ${MAX_EVALUATE_CHARS}) throw new RangeError('page.evaluate: the result is larger than ${MAX_EVALUATE_CHARS} characters of JSON');
        return s; })()`);
      return JSON.parse(text as string);
    }
    case 'setViewportSize': {
      const s = isObject(args[0]) ? args[0] : {};
      const ok = (n: unknown) => Number.isInteger(n) && (n as number) >= 1 && (n as number) <= MAX_VIEWPORT;
      if (!ok(s.width) || !ok(s.height)) throw new KilnError(`page.setViewportSize takes { width, height } of 1 to ${MAX_VIEWPORT} pixels`);
      await page.setViewportSize({ width: s.width as number, height: s.height as number });
      return null;
    }
    case 'consoleMessages': return events?.list.console.slice() ?? [];
    case 'dialogs': return events?.list.dialogs.slice() ?? [];
    case 'screenshot': {
      const o = isObject(args[0]) ? pick(args[0], ['fullPage', 'type', 'quality', 'omitBackground']) : {};
      return new Uint8Array(await page.screenshot(o));
    }
    default: {
      if (!PAGE_METHODS.has(method)) throw new KilnError(`page.${String(method).slice(0, 64)} is not available to extensions`);
      const fn = (page as unknown as Record<string, (...a: unknown[]) => unknown>)[method];
      return plain(await fn.apply(page, args));
    }
  }
}

/** One locator call: the guest's chain of steps rebuilt from `page`, then `method` on what it found. */
export async function locatorCall(page: Page, chain: [string, ...unknown[]][], method: string, args: unknown[]): Promise<unknown> {
  if (!Array.isArray(chain) || chain.length === 0 || chain.length > MAX_CHAIN) throw new KilnError(`a locator chain has 1 to ${MAX_CHAIN} steps`);
  let loc: Page | Locator = page;
  for (const step of chain) {
    const [name, ...a] = Array.isArray(step) ? step : [];
    if (typeof name !== 'string' || !LOCATOR_STEPS.has(name)) throw new KilnError(`locator step ${JSON.stringify(name)?.slice(0, 64)} is not available`);
    if ((name === 'first' || name === 'last' || name === 'nth') && loc === page) throw new KilnError(`${name}() needs a locator before it`);
    loc = (loc as unknown as Record<string, (...x: unknown[]) => Locator>)[name](...a.map(regexps));
  }
  if (!LOCATOR_METHODS.has(method)) throw new KilnError(`locator.${String(method).slice(0, 64)} is not available to extensions`);
  return plain(await (loc as unknown as Record<string, (...x: unknown[]) => unknown>)[method](...args));
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A locator step's argument with the guest's marked regular expressions ({"$kiln.regexp": [source, flags]},
 *  at the top or one level down, as in { name: /go/i }) made RegExps again. Only locator steps take them: the
 *  browser matches them, so a slow pattern costs the page, never the host's thread. */
function regexps(v: unknown): unknown {
  const one = (x: unknown): unknown => {
    const m = isObject(x) ? x['$kiln.regexp'] : undefined;
    if (!Array.isArray(m)) return x;
    const [source, flags] = m;
    if (typeof source !== 'string' || source.length > 1000 || typeof flags !== 'string' || !/^[dgimsuy]*$/.test(flags)) {
      throw new KilnError('a locator regular expression must be at most 1000 characters, with flags among dgimsuy');
    }
    return new RegExp(source, flags);
  };
  if (!isObject(v) || Array.isArray((v as Record<string, unknown>)['$kiln.regexp'])) return one(v);
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, one(x)]));
}
/** What a Playwright method returned, as plain JSON for the guest: a Response becomes {status, url}, an
 *  ElementHandle (waitForSelector) is released and becomes null; strings, numbers, booleans and arrays of
 *  them pass. No Playwright object is ever answered (it could not cross the boundary, or a thread). */
function plain(v: unknown): unknown {
  if (v === undefined || v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return v ?? null;
  if (Array.isArray(v)) return v.every((x) => typeof x === 'string') ? v : null;
  const r = v as { status?: unknown; url?: unknown; dispose?: unknown };
  if (typeof r.status === 'function' && typeof r.url === 'function') return { status: (r.status as () => number)(), url: (r.url as () => string)() };
  if (typeof r.dispose === 'function') void (r.dispose as () => Promise<void>)().catch(() => {});
  return null;
}
const pick = (o: Record<string, unknown>, keys: string[]) => Object.fromEntries(keys.filter((k) => o[k] !== undefined).map((k) => [k, o[k]]));

/** A declared host the operator's grant does not list (modes "granted", "declared" with a grant, and "ask"
 *  where nobody could be asked): the grant's refusal, naming the line to add. */
function notGrantedRefusal(grant: GrantCheck | undefined, host: string): PermissionError {
  return grant?.refuse(host) ?? new PermissionError(`${host} is not granted to this extension's browser ([grants] browser)`);
}

/** A host not in the tool's allow.browser: the author's refusal, naming the entry to add. */
export function refusal(tool: string, host: string, entries: string[]): PermissionError {
  return new PermissionError(`tool "${tool}" may not load ${host} in its browser: it is not in allow.browser (${entries.join(', ')}); add "${host}" to allow.browser`);
}

/** Playwright's errors keep their meaning in the guest (a TimeoutError stays one); the message's first lines. */
export function asKilnError(e: unknown): KilnError {
  if (e instanceof KilnError) return e;
  const err = e as Error;
  const k = new KilnError((err?.message ?? String(e)).split('\n').slice(0, 3).join(' ').slice(0, 1000));
  k.name = err?.name === 'TimeoutError' ? 'TimeoutError' : 'BrowserError';
  return k;
}
