// `page` and `context` (allow.browser) of one extension file in one session: its BrowserContext (made on first
// use, closed with the session), its gate, its pages by id, and the calls driving it. Every guest call is one
// `browser.call` op, checked here: the tool must declare allow.browser, and every request the context makes
// goes through the context's BrowserGate (gate.ts). What a call does on a page is page.ts's; how long and how
// much its pages may run, bounds.ts's; the browser itself, chromium.ts's.
//
// Invariants:
//  - A session's context is created with its own gate and no storage of another session's; pages of one
//    session cannot be named by another (ids are looked up in the session's own table). The guest holds only
//    numbers the host issued: page ids of its own session's context.
//  - Every request a page makes follows one rule, fetch's (policy.ts `pageRequestVerdict`): declared ∩
//    granted goes, a declared host the grant does not list is asked in mode "ask", the rest is refused;
//    page.goto and the gate judge by that same rule, and the gate logs each decision (BrowserGate).
//  - From an invocation's first browser op until its guest is idle, the invocation drives the context (a
//    lease: its gate driver and its bounds); when the guest is idle no lease is left, the gate lets nothing
//    out, and the pages' scripts stop (bounds.ts) before the call is answered.
//  - No download, no service worker, at most MAX_PAGES pages (popups included): past it a popup is closed.
//  - A context whose browser died or went is dropped with its pages and leases; the next call makes a new one.
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { KilnError, PermissionError } from '../../errors.js';
import type { BrowserGate, Driver, PageDecision } from './gate.js';
import type { GrantCheck } from '../../policy/grants.js';
import type { NetPolicy } from '../net/net.js';
import { PageBounds, type CallBounds, type PageLimits } from './bounds.js';
import { asKilnError, locatorCall, pageCall, PageEvents, refusal, type BrowserRequest, type Driving } from './page.js';

const MAX_PAGES = 16;

/** What a browser op of one call brings besides the request: the operator's grant of `browser`, the
 *  [approvals] check of a navigation, where the gate's decisions go, and the call's limits. */
export interface PageCall {
  grant?: GrantCheck;
  approve?: (url: string) => Promise<void>;
  record?: (d: PageDecision) => void;
  limits?: PageLimits;
}

/** What a session's context needs of the server's browser (chromium.ts Browsers). */
export interface BrowserSource {
  readonly enabled: boolean;
  /** The operator's [net] settings as they are now (the gate applies denyPrivate). */
  readonly netPolicy: () => NetPolicy;
  launch(): Promise<Browser>;
}

/** One call's use of the pages: its gate driver, how to stop driving, the operator's grant check (for its
 *  refusals), and its bounds (bounds.ts CallBounds). */
interface Lease extends Driving, CallBounds {
  release: () => void;
}

export class SessionBrowser {
  private context: Promise<{ context: BrowserContext; gate: BrowserGate }> | undefined;
  private pages = new Map<number, Page>();
  private nextPage = 1;
  private readonly events = new WeakMap<Page, PageEvents>();
  /** The invocations driving this context now (see Lease). */
  private readonly leases = new Map<number, Lease>();
  private readonly bounds = new PageBounds({
    current: async () => this.context && (await this.context.catch(() => undefined))?.context,
    dropPages: () => this.pages.clear(),
  });

  constructor(
    readonly session: string, private readonly browsers: BrowserSource, private readonly forget: () => void, private readonly onCrash: () => void,
  ) {}

  /** The browser died: if this context was open, the guest that drove it starts afresh (see Browsers). */
  crashed(): void {
    const had = this.context !== undefined;
    this.lost();
    if (had) this.onCrash();
  }

  /** The browser went away: this session starts with a new context next time. */
  lost(): void {
    this.leases.clear();
    this.bounds.forget();
    const c = this.context;
    this.context = undefined;
    this.pages.clear();
    void c?.then(({ gate }) => gate.close(), () => {});
  }

  async close(): Promise<void> {
    const c = this.context;
    this.lost();
    this.forget();
    await c?.then(({ context }) => context.close(), () => {}).catch(() => {});
  }

  private async open(): Promise<{ context: BrowserContext; gate: BrowserGate }> {
    this.context ??= (async () => {
      const browser = await this.browsers.launch();
      const { BrowserGate } = await import('./gate.js'); // node:http stays off the cold path of kiln run
      const gate = new BrowserGate(this.browsers.netPolicy);
      const port = await gate.ready;
      // Every request through the gate, loopback too (Chromium bypasses a proxy for loopback unless told not to).
      // No downloads (a page could fill the disk), no service workers (they outlive pages and calls).
      const context = await browser.newContext({
        serviceWorkers: 'block', acceptDownloads: false, proxy: { server: `http://127.0.0.1:${port}`, bypass: '<-loopback>' },
      });
      context.on('close', () => gate.close());
      // Popups (window.open, target=_blank) count towards the session's pages: past the limit they are closed.
      context.on('page', (p) => {
        if (context.pages().length > MAX_PAGES) void p.close().catch(() => {});
      });
      return { context, gate };
    })();
    try {
      return await this.context;
    } catch (e) {
      this.context = undefined;
      throw e;
    }
  }

  private adopt(id: number, page: Page): void {
    this.events.set(page, PageEvents.of(page));
    this.pages.set(id, page);
  }

  private async page(id: number): Promise<Page> {
    const { context } = await this.open();
    if (id === 0 && !this.pages.has(0)) this.adopt(0, await context.newPage());
    const page = this.pages.get(id);
    if (!page || page.isClosed()) throw new KilnError(`page ${id} is not open in this session`);
    return page;
  }

  /** The guest has no call in flight (or was discarded): no invocation drives the context any more, so the
   *  gate lets nothing out and cuts its tunnels, and the pages' scripts stop until a call uses them again. */
  idle(): void {
    if (this.leases.size === 0) return;
    for (const lease of this.leases.values()) lease.release();
    this.leases.clear();
    this.bounds.stopLater();
  }

  /** Resolves when no call drives the context and its pages' scripts have stopped (at once while a call
   *  still drives it: a call through plugins[...] ending inside its caller's stops nothing). */
  stopped(): Promise<void> {
    return (this.leases.size === 0 ? this.bounds.whenStopped() : undefined) ?? Promise.resolve();
  }

  /** One guest call, on behalf of invocation `inv` of `tool` (whose allow.browser is `entries`). From its
   *  first browser call until its guest is idle, the invocation drives the context: the page's own requests
   *  (a fetch a click starts, a WebSocket) are judged by its rule, also between its page calls. */
  async call(tool: string, entries: string[], request: BrowserRequest, signal: AbortSignal, inv: number, opts: PageCall = {}): Promise<unknown> {
    if (!this.browsers.enabled) throw new PermissionError('page/context: the browser is switched off on this server ([browser] enabled = false in kiln.toml)');
    if (entries.length === 0) throw new PermissionError(`tool "${tool}" declares no allow.browser, so it has no page or context; add the hosts its pages load to allow.browser`);
    signal.throwIfAborted();
    const { context, gate } = await this.open();
    let lease = this.leases.get(inv);
    if (!lease) {
      // The operator's grant narrows what the tool declares; in mode "ask" a declared host it does not list
      // is put to a human, for page.goto and the page's own requests alike (one rule, one driver).
      const { grant, record } = opts;
      const driver: Driver = {
        rule: { declared: entries, granted: grant?.list, askable: grant?.ask !== undefined, approved: new Set() },
        ask: grant?.ask && ((host, url) => grant.ask!(host, { op: 'browser.navigate', url })),
        record,
        explain: (v) => (v.by === 'grant' && grant ? grant.refuse(v.host) : refusal(tool, v.host, entries)).message,
      };
      const release = gate.drive(driver);
      lease = { driver, release, grant, limits: opts.limits, cpuAtStart: 0 };
      this.leases.set(inv, lease);
      await this.bounds.resume(context);
      lease.cpuAtStart = (await this.bounds.usage(context)).cpuMs;
    }
    const spent = await this.bounds.overLimit(tool, lease, context);
    if (spent) throw spent;
    let onAbort: (() => void) | undefined;
    // A cancelled call stops waiting at once (and its gate closes): Playwright's action runs out on its own.
    const cancelled = new Promise<never>((_, reject) => {
      onAbort = () => reject(new KilnError('the browser call was cancelled: its call had ended'));
      signal.addEventListener('abort', onAbort, { once: true });
    });
    // While the op is in flight, its pages are checked against the limits.
    const watch = this.bounds.watch(tool, lease, context);
    try {
      const value = await Promise.race([this.perform(tool, request, gate, lease, opts.approve), cancelled, watch.over]);
      const after = await this.bounds.overLimit(tool, lease, context);
      if (after) throw after;
      // What the page said and asked during (and before) this call goes with the answer when the guest has
      // page.on listeners; without them it is passed over, so listeners never hear what came before them.
      // Bytes travel alone: their events come with the next answer.
      if (request.target === 'context' || value instanceof Uint8Array) return value;
      const page = this.pages.get(typeof request.page === 'number' ? request.page : 0);
      const events = (page && this.events.get(page)?.fresh()) ?? { console: [], dialogs: [] };
      return request.events === true ? { value, events } : value;
    } catch (e) {
      throw asKilnError(e);
    } finally {
      watch.stop();
      signal.removeEventListener('abort', onAbort!);
    }
  }

  private async perform(tool: string, r: BrowserRequest, gate: BrowserGate, lease: Lease, approve?: (url: string) => Promise<void>): Promise<unknown> {
    const args = Array.isArray(r.args) ? r.args : [];
    if (r.target === 'context') return this.contextCall(r.method, args);
    const page = await this.page(typeof r.page === 'number' ? r.page : 0);
    if (r.target === 'locator') return locatorCall(page, r.chain ?? [], r.method, args);
    return pageCall(tool, page, r.method, args, gate, lease, this.events.get(page), approve);
  }

  private async contextCall(method: string, args: unknown[]): Promise<unknown> {
    const { context } = await this.open();
    switch (method) {
      case 'cookies': return context.cookies(args[0] as string[] | undefined);
      case 'addCookies': await context.addCookies(args[0] as Parameters<BrowserContext['addCookies']>[0]); return null;
      case 'clearCookies': await context.clearCookies(); return null;
      case 'newPage': {
        if (this.pages.size >= MAX_PAGES) throw new KilnError(`a session may have at most ${MAX_PAGES} pages open`);
        const id = this.nextPage++;
        this.adopt(id, await context.newPage());
        return id;
      }
      case 'pages': {
        await this.page(0);
        return [...this.pages].filter(([, p]) => !p.isClosed()).map(([id]) => id);
      }
      default: throw new KilnError(`context.${String(method).slice(0, 64)} is not available to extensions`);
    }
  }
}
