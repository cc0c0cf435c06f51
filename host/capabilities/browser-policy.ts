// allow.browser's rule, as a pure function the gate (browser-gate.ts) and the page's navigation check share
// and tests call directly: a page of a tool may load a URL only if it never reaches the network (about:,
// data:, blob:) or its host and port match an entry, in exactly allow.net's grammar.
import { hostAllowed } from './net.js';

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
