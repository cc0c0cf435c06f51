// The server's one Chromium (allow.browser): launched through playwright-core on first use, owned by the
// server, closed with it; every session's context (context.ts) is made in it.
//
// Invariants:
//  - One browser per server, launched at most once at a time; a launch that fails is forgotten, so the next
//    call tries again, and its refusal names the setting ([browser] executablePath).
//  - A browser that crashes or is killed is dropped; the next call launches a new one (`onCrash` lets the
//    sessions that had a context reset their guests' globals, vars kept).
//  - Chromium runs with WebRTC bound to the proxy (its UDP would pass any proxy, and so the gate), no
//    background networking, and every renderer's V8 old space capped at RENDERER_HEAP_MIB.
import type { Browser } from 'playwright-core';
import { KilnError } from '../../errors.js';
import type { BrowserSettings } from '../../policy/policy.js';
import { DEFAULT_NET_POLICY, type NetPolicy } from '../net/net.js';
import { SessionBrowser, type BrowserSource } from './context.js';

/** Every renderer's V8 old space is capped at the largest memoryLimitBytes a tool may declare (512 MiB), so
 *  even one synchronous allocation between two checks cannot take the machine. */
const RENDERER_HEAP_MIB = 512;

/** The server's browser: launched lazily, relaunched after it dies. */
export class Browsers implements BrowserSource {
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
