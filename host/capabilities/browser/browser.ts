// `page` and `context` (allow.browser): one Chromium per server, launched on first use through playwright-core,
// one BrowserContext per session, closed with it. The guest holds only numbers the host issued: page ids of
// its own session's context. Every guest call is one `browser.call` op, checked here: the tool must declare
// allow.browser, the method must be on the lists below, and every request the context makes goes through the
// session's BrowserGate (browser-gate.ts).
//
// Invariants:
//  - No Playwright object crosses the boundary: requests carry method names, JSON arguments, page ids and
//    locator chains (lists of [step, ...args]) that are rebuilt here on every call.
//  - A session's context is created with its own gate and no storage of another session's; pages of one
//    session cannot be named by another (ids are looked up in the session's own table).
//  - A browser that crashes or is killed is dropped; the next call launches a new one (`onCrash` lets the
//    sessions that had a context reset their guests' globals, vars kept).
//  - Every request a page makes follows one rule, fetch's (browser-policy.ts `pageRequestVerdict`): declared
//    ∩ granted goes, a declared host the grant does not list is asked in mode "ask", the rest is refused;
//    page.goto and the gate judge by that same rule, and the gate logs each decision (BrowserGate).
//  - A page runs only while a call drives it: when the guest is idle, every page of the context (popups and
//    frames of other sites, which run in renderer processes of their own, included) has its scripts disabled
//    and a running one terminated (CDP Emulation.setScriptExecutionDisabled, Runtime.terminateExecution),
//    and its dedicated workers are paused in their debugger, before the call is answered
//    (Session.pagesStopped); the next call's first browser op resumes them all. Pages that do not stop
//    within FREEZE_MS are closed.
//  - A page is bounded like its guest (PageLimits): after each browser op, and every WATCH_MS while one is
//    in flight, the context's JavaScript memory (pages, frames, workers: V8 heap, DOM heap, ArrayBuffer
//    storage) is checked against the guest's memory limit, and its pages' main-thread CPU time since the
//    call began against the call's CPU budget. Over either, the pages' scripts stop, the op fails with a
//    MemoryLimitError or CpuLimitError naming the setting, the rest of the call gets no page (memory: the
//    pages are closed).
import type { Browser, BrowserContext, CDPSession, Frame, Locator, Page } from 'playwright-core';
import { CpuLimitError, KilnError, MemoryLimitError, PermissionError } from '../../errors.js';
import type { BrowserSettings } from '../../policy/policy.js';
import type { BrowserGate, Driver, PageDecision } from './gate.js';
import { browserUrlAllowed, hostOf, pageRequestVerdict } from './policy.js';
import { DEFAULT_NET_POLICY, type NetPolicy } from '../net/net.js';
import type { GrantCheck } from '../../policy/grants.js';

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
const MAX_PAGES = 16;
/** How long a page has to stop its scripts when its call ends before it is closed instead. */
const FREEZE_MS = 5000;
/** How long a worker has to answer one CDP message before it is taken as gone. */
const WORKER_MS = 2000;
/** How often the limits are checked while a browser op is in flight. */
const WATCH_MS = 250;
/** Every renderer's V8 old space is capped at the largest memoryLimitBytes a tool may declare (512 MiB), so
 *  even one synchronous allocation between two checks cannot take the machine. */
const RENDERER_HEAP_MIB = 512;

/** The bounds of a call's pages: the guest's memory limit and the call's CPU budget (policy/limits.ts), each with
 *  the setting it comes from, for the refusal. */
export interface PageLimits {
  memory: { bytes: number; setting: string };
  cpu?: { ms: number; setting: string };
}

/** What a browser op of one call brings besides the request: the operator's grant of `browser`, the
 *  [approvals] check of a navigation, where the gate's decisions go, and the call's limits. */
export interface PageCall {
  grant?: GrantCheck;
  approve?: (url: string) => Promise<void>;
  record?: (d: PageDecision) => void;
  limits?: PageLimits;
}

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
class PageEvents {
  readonly list = { console: [] as PageEvent[], dialogs: [] as PageEvent[] };
  private total = { console: 0, dialogs: 0 };
  private given = { console: 0, dialogs: 0 };

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

/** The server's browser: launched lazily, relaunched after it dies. */
export class Browsers {
  private browser: Promise<Browser> | undefined;
  private readonly sessions = new Set<SessionBrowser>();

  /** `netPolicy`: the operator's [net] settings as they are now (the gate applies denyPrivate). */
  constructor(private readonly settings: BrowserSettings, readonly netPolicy: () => NetPolicy = () => DEFAULT_NET_POLICY) {}

  get enabled(): boolean {
    return this.settings.enabled;
  }

  async launch(): Promise<Browser> {
    this.browser ??= (async () => {
      // An optional peer of the package: installed beside kiln-mcp when a server's tools use the browser.
      const { chromium } = await import('playwright-core').catch(() => {
        throw new Error('playwright-core is not installed: install it beside kiln (`npm install playwright-core`, or `npx -p kiln-mcp -p playwright-core kiln mcp ...`)');
      });
      const args = ['--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run',
        // WebRTC's UDP (ICE, STUN, TURN) does not go through a proxy: without this a page reaches any host:port
        // past the gate, during and between calls. With it, WebRTC may only use the proxy, which judges it.
        '--webrtc-ip-handling-policy=disable_non_proxied_udp', `--js-flags=--max-old-space-size=${RENDERER_HEAP_MIB}`];
      if (process.getuid?.() === 0) args.push('--no-sandbox'); // Chromium refuses to run its sandbox as root
      const b = await chromium.launch({ executablePath: this.settings.executablePath, headless: this.settings.headless, args });
      b.on('disconnected', () => this.crashed(b));
      return b;
    })().catch((e) => {
      this.browser = undefined;
      throw new KilnError(`the browser could not be started (${this.settings.executablePath}; [browser] executablePath in kiln.toml): ${(e as Error).message.split('\n')[0]}`);
    });
    return this.browser;
  }

  private crashed(b: Browser): void {
    void this.browser?.then((current) => {
      if (current !== b) return;
      this.browser = undefined;
      for (const s of this.sessions) s.crashed();
    });
  }

  /** One extension's browser state in one session (its context is made on first use). `onCrash`: the browser
   *  died while this context was open (the session resets that extension's guest, vars kept). */
  forSession(name: string, onCrash: () => void): SessionBrowser {
    const s = new SessionBrowser(name, this, () => this.sessions.delete(s), onCrash);
    this.sessions.add(s);
    return s;
  }

  async close(): Promise<void> {
    const b = this.browser;
    this.browser = undefined;
    for (const s of this.sessions) s.lost();
    if (b) await (await b.catch(() => undefined))?.close().catch(() => {});
  }
}

export class SessionBrowser {
  private context: Promise<{ context: BrowserContext; gate: BrowserGate }> | undefined;
  private pages = new Map<number, Page>();
  private nextPage = 1;

  constructor(
    readonly session: string, private readonly browsers: Browsers, private readonly forget: () => void, private readonly onCrash: () => void,
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
    this.frozen = undefined;
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

  private readonly events = new WeakMap<Page, PageEvents>();

  private adopt(id: number, page: Page): void {
    const ev = new PageEvents();
    page.on('console', (m) => ev.add('console', { type: m.type(), text: m.text().slice(0, 4096) }));
    page.on('dialog', (d) => {
      ev.add('dialogs', { type: d.type(), message: d.message().slice(0, 4096) });
      void d.dismiss().catch(() => {});
    });
    this.events.set(page, ev);
    this.pages.set(id, page);
  }

  private async page(id: number): Promise<Page> {
    const { context } = await this.open();
    if (id === 0 && !this.pages.has(0)) this.adopt(0, await context.newPage());
    const page = this.pages.get(id);
    if (!page || page.isClosed()) throw new KilnError(`page ${id} is not open in this session`);
    return page;
  }

  /** The invocations driving this context now: their gate driver, how to stop driving, their CPU baseline,
   *  and the limit error that ended their use of the pages (then every later op of the call gets it). */
  private readonly leases = new Map<number, Lease>();
  /** The pages' scripts were stopped when the last call ended; the next lease waits for that, then resumes. */
  private frozen: Promise<void> | undefined;
  private readonly cdps = new WeakMap<Page | Frame, Promise<CDPSession>>();
  private readonly workers = new WeakMap<CDPSession, WorkerTargets>();

  /** The guest has no call in flight (or was discarded): no invocation drives the context any more, so the
   *  gate lets nothing out and cuts its tunnels, and the pages' scripts stop until a call uses them again. */
  idle(): void {
    if (this.leases.size === 0) return;
    for (const lease of this.leases.values()) lease.release();
    this.leases.clear();
    const previous = this.frozen;
    this.frozen = (async () => {
      await previous;
      await this.freeze();
    })().catch(() => {}); // freeze never fails: a page it cannot reach runs nothing
  }

  /** Resolves when no call drives the context and its pages' scripts have stopped (at once while a call
   *  still drives it: a call through plugins[...] ending inside its caller's stops nothing). */
  stopped(): Promise<void> {
    return this.leases.size === 0 && this.frozen ? this.frozen.catch(() => {}) : Promise.resolve();
  }

  /** A CDP session of a page, or of a frame that runs in a process of its own (an out-of-process iframe);
   *  undefined for a frame that runs inside its page's process (the page's session covers it) or one gone. */
  private async cdp(target: Page | Frame, context: BrowserContext): Promise<CDPSession | undefined> {
    let c = this.cdps.get(target);
    if (!c) {
      c = context.newCDPSession(target).then(async (s) => {
        await s.send('Performance.enable');
        this.workers.set(s, new WorkerTargets(s));
        // Its dedicated workers attach to this session (not flattened: they are reached through it).
        await s.send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: false, flatten: false });
        return s;
      });
      // A frame's refusal is not kept: the frame may move to a process of its own later.
      c.catch(() => this.cdps.delete(target));
      this.cdps.set(target, c);
    }
    return c.catch(() => undefined);
  }

  /** The sessions of everything in the context that runs scripts on its own thread of a renderer: every
   *  page (popups too) and every out-of-process frame in them. */
  private async scripted(context: BrowserContext): Promise<CDPSession[]> {
    const all = context.pages().flatMap((page) => [page as Page | Frame, ...page.frames().filter((f) => f !== page.mainFrame())]);
    return (await Promise.all(all.map((x) => this.cdp(x, context)))).filter((s): s is CDPSession => s !== undefined);
  }

  /** Every page of the context (popups and out-of-process frames too): scripts disabled, a running one
   *  terminated; pages that do not answer within FREEZE_MS are closed. */
  private async freeze(): Promise<void> {
    const c = this.context && (await this.context.catch(() => undefined));
    if (!c) return;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), FREEZE_MS)));
    const done = (async () => {
      await Promise.all((await this.scripted(c.context)).map(async (s) => {
        try {
          // Disabling waits for a script running now; terminating ends it (a busy loop), and then nothing
          // starts again until resume.
          // Its workers are paused in their debugger (a busy loop too) until resume.
          await Promise.all([s.send('Emulation.setScriptExecutionDisabled', { value: true }), s.send('Runtime.terminateExecution'), this.workers.get(s)?.pause()]);
        } catch {
          // a page closed or crashed meanwhile: nothing runs in it
        }
      }));
    })();
    try {
      if ((await Promise.race([done, late])) === 'late') {
        await Promise.all(c.context.pages().map((p) => p.close({ runBeforeUnload: false }).catch(() => {})));
        this.pages.clear();
      }
    } finally {
      clearTimeout(timer);
    }
  }

  /** The pages may run again (the start of a call that uses them). */
  private async resume(context: BrowserContext): Promise<void> {
    await this.frozen;
    await Promise.all((await this.scripted(context)).map((s) => Promise.all([
      s.send('Emulation.setScriptExecutionDisabled', { value: false }).catch(() => {}), this.workers.get(s)?.resume(),
    ])));
  }

  /** The context's JavaScript memory (V8 heap, DOM heap, ArrayBuffer storage) and main-thread CPU ms. */
  private async usage(context: BrowserContext): Promise<{ bytes: number; cpuMs: number }> {
    let bytes = 0;
    let cpuMs = 0;
    await Promise.all((await this.scripted(context)).map(async (s) => {
      try {
        const heap = await s.send('Runtime.getHeapUsage') as { usedSize: number; embedderHeapUsedSize?: number; backingStorageSize?: number };
        bytes += heap.usedSize + (heap.embedderHeapUsedSize ?? 0) + (heap.backingStorageSize ?? 0);
        const { metrics } = await s.send('Performance.getMetrics');
        cpuMs += (metrics.find((m) => m.name === 'TaskDuration')?.value ?? 0) * 1000;
        for (const w of await this.workers.get(s)?.send('Runtime.getHeapUsage') ?? []) {
          const h = w as { usedSize?: number; backingStorageSize?: number } | undefined;
          bytes += (h?.usedSize ?? 0) + (h?.backingStorageSize ?? 0);
        }
      } catch {
        // closed or crashed meanwhile
      }
    }));
    return { bytes, cpuMs };
  }

  /** The call's pages against its limits: undefined while within them; else the error, after the pages'
   *  scripts were stopped (and, over memory, the pages closed so their memory goes). */
  private async overLimit(tool: string, lease: Lease, context: BrowserContext): Promise<KilnError | undefined> {
    if (lease.spent) return lease.spent;
    const limits = lease.limits;
    if (!limits) return undefined;
    const { bytes, cpuMs } = await this.usage(context);
    if (lease.spent) return lease.spent;
    const mib = (n: number) => `${(n / 1048576).toFixed(1)} MiB`;
    if (bytes > limits.memory.bytes) {
      lease.spent = new MemoryLimitError(`tool "${tool}"'s pages hold ${mib(bytes)} of JavaScript memory, more than its ${mib(limits.memory.bytes)} memory limit (${limits.memory.setting}); its pages were closed`);
      await this.freeze();
      await Promise.all(context.pages().map((p) => p.close({ runBeforeUnload: false }).catch(() => {})));
      this.pages.clear();
    } else if (limits.cpu && cpuMs - lease.cpuAtStart > limits.cpu.ms) {
      lease.spent = new CpuLimitError(`tool "${tool}"'s pages used ${Math.round(cpuMs - lease.cpuAtStart)} ms of CPU time, more than its ${limits.cpu.ms} ms (${limits.cpu.setting}); its pages' scripts were stopped`);
      await this.freeze();
    }
    return lease.spent;
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
      await this.resume(context);
      lease.cpuAtStart = (await this.usage(context)).cpuMs;
    }
    const spent = await this.overLimit(tool, lease, context);
    if (spent) throw spent;
    let onAbort: (() => void) | undefined;
    // A cancelled call stops waiting at once (and its gate closes): Playwright's action runs out on its own.
    const cancelled = new Promise<never>((_, reject) => {
      onAbort = () => reject(new KilnError('the browser call was cancelled: its call had ended'));
      signal.addEventListener('abort', onAbort, { once: true });
    });
    // While the op is in flight, its pages are checked against the limits every WATCH_MS.
    let watching = true;
    let watchTimer: NodeJS.Timeout | undefined;
    const current = lease;
    const over = new Promise<never>((_, reject) => {
      const tick = () => {
        watchTimer = setTimeout(() => void this.overLimit(tool, current, context).then((e) => {
          if (e) reject(e);
          else if (watching) tick();
        }, () => {}), WATCH_MS);
      };
      if (current.limits) tick();
    });
    over.catch(() => {});
    try {
      const value = await Promise.race([this.perform(tool, request, gate, lease, opts.approve), cancelled, over]);
      const after = await this.overLimit(tool, lease, context);
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
      watching = false;
      clearTimeout(watchTimer);
      signal.removeEventListener('abort', onAbort!);
    }
  }

  private async perform(tool: string, r: BrowserRequest, gate: BrowserGate, lease: Lease, approve?: (url: string) => Promise<void>): Promise<unknown> {
    const args = Array.isArray(r.args) ? r.args : [];
    if (r.target === 'context') return this.contextCall(r.method, args);
    const page = await this.page(typeof r.page === 'number' ? r.page : 0);
    if (r.target === 'locator') return this.locatorCall(page, r.chain ?? [], r.method, args);
    switch (r.method) {
      case 'goto': {
        const url = String(args[0]);
        const { rule } = lease.driver;
        // Not declared: the author's refusal; declared and not granted: the operator's.
        const refuse = (host: string) => {
          const declared = ['http', 'https'].some((sch) => browserUrlAllowed(`${sch}://${host}/`, rule.declared));
          return declared && rule.granted ? notGrantedRefusal(lease, host) : refusal(tool, host, rule.declared);
        };
        const verdict = pageRequestVerdict(url, rule);
        if (verdict.verdict === 'deny') throw verdict.by === 'grant' ? notGrantedRefusal(lease, verdict.host) : refusal(tool, verdict.host, rule.declared);
        // [policy] mode "ask": a declared host the grant does not list is put to a human, the same question
        // the gate asks for the page's own requests (asked once per call and host).
        if (verdict.verdict === 'ask') await gate.askFor(lease.driver, verdict.host, url);
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
      case 'consoleMessages': return this.events.get(page)?.list.console.slice() ?? [];
      case 'dialogs': return this.events.get(page)?.list.dialogs.slice() ?? [];
      case 'screenshot': {
        const o = isObject(args[0]) ? pick(args[0], ['fullPage', 'type', 'quality', 'omitBackground']) : {};
        return new Uint8Array(await page.screenshot(o));
      }
      default: {
        if (!PAGE_METHODS.has(r.method)) throw new KilnError(`page.${String(r.method).slice(0, 64)} is not available to extensions`);
        const fn = (page as unknown as Record<string, (...a: unknown[]) => unknown>)[r.method];
        return plain(await fn.apply(page, args));
      }
    }
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

  private async locatorCall(page: Page, chain: [string, ...unknown[]][], method: string, args: unknown[]): Promise<unknown> {
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

/** The dedicated workers attached to one CDP session, reached by messages through it: paused in their
 *  debugger between calls, their heaps counted with their page's. A worker that does not answer within
 *  WORKER_MS is taken as gone (its message's answer is undefined). */
class WorkerTargets {
  private readonly ids = new Set<string>();
  private readonly pending = new Map<number, (result: unknown) => void>();
  private next = 1;

  constructor(private readonly session: CDPSession) {
    session.on('Target.attachedToTarget', (e) => {
      if (e.targetInfo.type === 'worker') this.ids.add(e.sessionId);
    });
    session.on('Target.detachedFromTarget', (e) => {
      if (e.sessionId) this.ids.delete(e.sessionId);
    });
    session.on('Target.receivedMessageFromTarget', (e) => {
      let m: { id?: number; result?: unknown };
      try {
        m = JSON.parse(e.message);
      } catch {
        return;
      }
      const done = m.id === undefined ? undefined : this.pending.get(m.id);
      if (done) {
        this.pending.delete(m.id!);
        done(m.result);
      }
    });
  }

  /** `method` sent to every worker; their results, in no particular order. */
  send(method: string): Promise<unknown[]> {
    return Promise.all([...this.ids].map((sessionId) => new Promise<unknown>((resolve) => {
      const id = this.next++;
      const timer = setTimeout(() => {
        this.pending.delete(id);
        resolve(undefined);
      }, WORKER_MS);
      this.pending.set(id, (result) => {
        clearTimeout(timer);
        resolve(result);
      });
      this.session.send('Target.sendMessageToTarget', { sessionId, message: JSON.stringify({ id, method, params: {} }) }).catch(() => {
        clearTimeout(timer);
        this.pending.delete(id);
        resolve(undefined);
      });
    })));
  }

  async pause(): Promise<void> {
    await this.send('Debugger.enable');
    await this.send('Debugger.pause');
  }

  async resume(): Promise<void> {
    await this.send('Debugger.resume');
    await this.send('Debugger.disable');
  }
}

/** One call's use of the pages: its gate driver, how to stop driving, the operator's grant check (for its
 *  refusals), its limits, its pages' CPU time when it began, and the limit error that ended its use of them. */
interface Lease {
  driver: Driver;
  release: () => void;
  grant?: GrantCheck;
  limits?: PageLimits;
  cpuAtStart: number;
  spent?: KilnError;
}

/** A declared host the operator's grant does not list (modes "granted", "declared" with a grant, and "ask"
 *  where nobody could be asked): the grant's refusal, naming the line to add. */
function notGrantedRefusal(lease: Lease, host: string): PermissionError {
  return lease.grant?.refuse(host) ?? new PermissionError(`${host} is not granted to this extension's browser ([grants] browser)`);
}

function refusal(tool: string, host: string, entries: string[]): PermissionError {
  return new PermissionError(`tool "${tool}" may not load ${host} in its browser: it is not in allow.browser (${entries.join(', ')}); add "${host}" to allow.browser`);
}

/** Playwright's errors keep their meaning in the guest (a TimeoutError stays one); the message's first lines. */
function asKilnError(e: unknown): KilnError {
  if (e instanceof KilnError) return e;
  const err = e as Error;
  const k = new KilnError((err?.message ?? String(e)).split('\n').slice(0, 3).join(' ').slice(0, 1000));
  k.name = err?.name === 'TimeoutError' ? 'TimeoutError' : 'BrowserError';
  return k;
}
