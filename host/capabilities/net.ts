// allow.net: which URLs a handler may reach. Pure functions: tests call them directly, and
// capabilities/http.ts asks them before every connection and again on every redirect hop.
//
// Rules (docs/capabilities.md):
//  - Only http: and https:.
//  - A URL is parsed with the WHATWG parser (the same one the guest's URL uses), so the host sees what a
//    client would connect to: case folded, IDNA names in punycode, IPv4 in decimal/octal/hex forms
//    canonicalised, IPv6 bracketed, userinfo split off (`http://allowed.com@evil.com/` is evil.com).
//    A trailing dot is dropped before matching.
//  - An entry is an exact host (`api.box.com`), or `*.suffix`, which also matches the apex (`box.com`),
//    optionally with `:port`; without a port any port matches. IPv6 entries are bracketed: `[::1]:8080`.
//  - An empty or absent list means NO network, unless the operator sets `[net] emptyMeansUnrestricted`.
//  - The operator can forbid private, loopback and link-local addresses; that is checked on the address a
//    name resolves to, at connect time (DNS rebinding), by `addressAllowed`.
import { BlockList, isIP } from 'node:net';
import { domainToASCII } from 'node:url';
import { PermissionError } from '../errors.js';

export interface NetPolicy {
  /** Compatibility with the ferridriver default: a tool that declares no `net` may reach any host. */
  emptyMeansUnrestricted: boolean;
  /** Refuse private, loopback, link-local and unspecified addresses, after DNS resolution. */
  denyPrivate: boolean;
  /** Largest response body delivered to a guest, in bytes. */
  maxResponseBytes: number;
  /** Per request (headers and body), in milliseconds. */
  timeoutMs: number;
  /** Requests in flight at once, per session. */
  maxConcurrent: number;
  /** Redirect hops followed per request. */
  maxRedirects: number;
}

export const DEFAULT_NET_POLICY: NetPolicy = {
  emptyMeansUnrestricted: false,
  denyPrivate: false,
  maxResponseBytes: 128 * 1024 * 1024,
  timeoutMs: 30_000,
  maxConcurrent: 16,
  maxRedirects: 20,
};

export interface HostPattern {
  /** Normalised host, without the `*.` of a wildcard. */
  host: string;
  wildcard: boolean;
  port?: number;
}

export class NetPatternError extends Error {
  override name = 'NetPatternError';
}

/** Lower-case, punycode, no trailing dot, IPv6 without brackets. '' if the name is not a valid host. */
export function normaliseHost(host: string): string {
  let h = host.trim().toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  if (isIP(h) === 6) return new URL(`http://[${h}]/`).hostname.slice(1, -1); // canonical form
  h = h.replace(/\.$/, '');
  return domainToASCII(h);
}

/** Parse one `allow.net` entry. */
export function parsePattern(entry: string): HostPattern {
  const e = entry.trim();
  const m = /^(\*\.)?(\[[0-9a-fA-F:.]+\]|[^:/\s@]+)(?::(\d{1,5}))?$/.exec(e);
  if (!m) throw new NetPatternError(`"${entry}" is not a host, *.suffix, or host:port`);
  const host = normaliseHost(m[2]);
  if (!host) throw new NetPatternError(`"${entry}" is not a valid host name`);
  const port = m[3] === undefined ? undefined : Number(m[3]);
  if (port !== undefined && (port < 1 || port > 65535)) throw new NetPatternError(`"${entry}" has an invalid port`);
  return { host, wildcard: m[1] !== undefined, port };
}

const DEFAULT_PORT: Record<string, number> = { 'http:': 80, 'https:': 443 };

/** Whether `host` (normalised) on `port` matches one of `entries` (allow.net / allow.browser entries). */
export function hostAllowed(entries: string[], host: string, port: number): boolean {
  const h = normaliseHost(host);
  return entries.some((e) => matches(parsePattern(e), h, port));
}

function matches(p: HostPattern, host: string, port: number): boolean {
  if (p.port !== undefined && p.port !== port) return false;
  if (host === p.host) return true;
  return p.wildcard && host.endsWith('.' + p.host);
}

/** Parse `input` and check it against a tool's `allow.net`; returns the URL to connect to, or throws. */
export function checkUrl(tool: string, input: string, net: string[], policy: NetPolicy): URL {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    throw new PermissionError(`fetch: ${JSON.stringify(input.slice(0, 200))} is not a valid absolute URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new PermissionError(`fetch: only http and https URLs are allowed, not ${url.protocol}`);
  }
  if (net.length === 0) {
    if (policy.emptyMeansUnrestricted) return url;
    throw new PermissionError(`tool "${tool}" declares no allow.net, so it has no network access (${url.host} refused)`);
  }
  const host = normaliseHost(url.hostname);
  const port = url.port ? Number(url.port) : DEFAULT_PORT[url.protocol];
  const patterns = net.map(parsePattern);
  if (!patterns.some((p) => matches(p, host, port))) {
    throw new PermissionError(`tool "${tool}" may not reach ${host}${url.port ? ':' + url.port : ''}: it is not in allow.net (${net.join(', ')})`);
  }
  return url;
}

const PRIVATE = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16],
  ['172.16.0.0', 12], ['192.0.0.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) PRIVATE.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8]] as const) PRIVATE.addSubnet(net, bits, 'ipv6');

/** Whether a resolved address may be connected to under `policy`. IPv4-mapped IPv6 is judged as IPv4. */
export function addressAllowed(address: string, policy: NetPolicy): boolean {
  if (!policy.denyPrivate) return true;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped) return !PRIVATE.check(mapped, 'ipv4');
  const family = isIP(address);
  if (family === 0) return false;
  return !PRIVATE.check(address, family === 6 ? 'ipv6' : 'ipv4');
}
