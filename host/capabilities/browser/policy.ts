// allow.browser's rule, as pure functions the gate (gate.ts) and the page's navigation check share
// and tests call directly: a page of a tool may load a URL only if it never reaches the network (about:,
// data:, blob:) or its host and port match an entry, in exactly allow.net's grammar; under the operator's
// grant, every request a page makes is allowed, asked or refused exactly as fetch's (`pageRequestVerdict`).
import { hostAllowed } from '../net/net.js';

const DEFAULT_PORT: Record<string, number> = { 'http:': 80, 'https:': 443, 'ws:': 80, 'wss:': 443 };

/** URLs a page may load without any grant: they never reach the network. */
const LOCAL_SCHEMES = new Set(['about:', 'data:', 'blob:']);

/** Pure: whether a page of a tool with `allow.browser` = `entries` may load `url`. */
export function browserUrlAllowed(url: string, entries: string[]): boolean {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return false;
  }
  if (LOCAL_SCHEMES.has(u.protocol)) return true;
  const port = DEFAULT_PORT[u.protocol];
  if (port === undefined) return false; // file:, chrome:, ftp:, ...: never
  return hostAllowed(entries, u.hostname, u.port ? Number(u.port) : port);
}

/** "host:port" of a URL, as refusals name it. */
export function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url.slice(0, 200);
  }
}

/** One driving call's say on a request of its page: let it through, put it to a human first (mode "ask": the
 *  host is declared and the grant does not list it), or refuse it — and who refused ("declared": not in
 *  allow.browser; "grant": declared, not granted, and nobody may be asked). */
export type PageVerdict = { verdict: 'allow' } | { verdict: 'ask'; host: string } | { verdict: 'deny'; by: 'declared' | 'grant'; host: string };

/** What a call of a tool needs to judge its pages' requests: its allow.browser, the operator's grant of
 *  `browser` (absent: grants do not narrow it), whether mode "ask" may put a declared host to a human, and the
 *  hosts ("host:port") a human allowed during this call. */
export interface PageRule {
  declared: string[];
  granted?: string[];
  askable?: boolean;
  approved?: ReadonlySet<string>;
}

/** Pure: the rule every request a page makes follows, navigations and the page's own requests alike — the
 *  same as fetch's: declared ∩ granted goes, a declared host the grant does not list is asked in mode "ask"
 *  (once a human allowed its host in this call, it goes), anything else is refused. */
export function pageRequestVerdict(url: string, rule: PageRule): PageVerdict {
  const host = hostOf(url);
  if (!browserUrlAllowed(url, rule.declared)) return { verdict: 'deny', by: 'declared', host };
  if (!rule.granted || browserUrlAllowed(url, rule.granted) || rule.approved?.has(host)) return { verdict: 'allow' };
  return rule.askable ? { verdict: 'ask', host } : { verdict: 'deny', by: 'grant', host };
}
