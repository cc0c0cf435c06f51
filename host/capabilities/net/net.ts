// allow.net: which URLs a handler may reach. Pure functions: tests call them directly, and
// capabilities/net/http.ts asks them before every connection and again on every redirect hop.
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
import { PermissionError } from '../../errors.js';

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
  if (host.includes('*')) throw new NetPatternError(`"${entry}" is not a host: a wildcard is written *.suffix (e.g. *.example.com), and no pattern allows every host`);
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

/** Parse `input` and check it against a tool's `allow.net`; returns the URL to connect to, or throws. A
 *  refusal quotes the manifest line that allows the host; `alsoGrant(item)` says what the operator must add
 *  too, when their grant would refuse it next. */
export function checkUrl(tool: string, input: string, net: string[], policy: NetPolicy, alsoGrant?: (item: string) => string | undefined): URL {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    throw new PermissionError(`fetch: ${JSON.stringify(input.slice(0, 200))} is not a valid absolute URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new PermissionError(`fetch: only http and https URLs are allowed, not ${url.protocol}`);
  }
  const host = normaliseHost(url.hostname);
  const item = `${host.includes(':') ? `[${host}]` : host}${url.port ? ':' + url.port : ''}`;
  const toAllow = () => {
    const grant = alsoGrant?.(item);
    return `; to allow it, add allow: { net: ${JSON.stringify([...net, item]).replaceAll('","', '", "')} } to the tool's manifest` +
      (grant ? `, and the operator must grant it too: ${grant}` : '');
  };
  if (net.length === 0) {
    if (policy.emptyMeansUnrestricted) return url;
    throw new PermissionError(`tool "${tool}" declares no allow.net, so it has no network access (${url.host} refused)${toAllow()}`);
  }
  const port = url.port ? Number(url.port) : DEFAULT_PORT[url.protocol];
  const patterns = net.map(parsePattern);
  if (!patterns.some((p) => matches(p, host, port))) {
    throw new PermissionError(`tool "${tool}" may not reach ${item}: it is not in allow.net (${net.join(', ')})${toAllow()}`);
  }
  return url;
}

/** The private ranges, made at their first use (a process that reaches no network never loads Node's BlockList). */
let privateRanges: BlockList | undefined;
function privateList(): BlockList {
  if (privateRanges) return privateRanges;
  const list = new BlockList();
  for (const [net, bits] of [
    ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16],
    ['172.16.0.0', 12], ['192.0.0.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4],
  ] as const) list.addSubnet(net, bits, 'ipv4');
  // IPv6: unspecified, loopback, unique-local, link-local, site-local (deprecated, still routable on some
  // networks), multicast, and the local-use NAT64 prefix (RFC 8215), whose IPv4 part is whatever the network says.
  for (const [net, bits] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8], ['64:ff9b:1::', 48]] as const) {
    list.addSubnet(net, bits, 'ipv6');
  }
  return (privateRanges = list);
}

/** The eight 16-bit groups of an IPv6 address (`isIP` has accepted it), a trailing dotted quad included. */
function ipv6Groups(address: string): number[] {
  let a = address.toLowerCase().replace(/%.*$/, '');
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(a);
  if (quad) {
    const [b1, b2, b3, b4] = quad.slice(1).map(Number);
    a = `${a.slice(0, quad.index)}${((b1 << 8) | b2).toString(16)}:${((b3 << 8) | b4).toString(16)}`;
  }
  const [head, tail] = a.includes('::') ? a.split('::') : [a, undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
  return groups.map((g) => parseInt(g, 16));
}

/** The IPv4 addresses an IPv6 address carries, where a network may deliver it to those IPv4 hosts:
 *  IPv4-mapped (::ffff:0:0/96), IPv4-compatible (::/96, deprecated), IPv4-translated (::ffff:0:0:0/96),
 *  NAT64's well-known prefix (64:ff9b::/96), 6to4 (2002::/16) and Teredo (2001::/32, RFC 4380: the relay's
 *  server in groups 2-3, the client in groups 6-7 with every bit inverted). */
function embeddedIpv4(groups: number[]): string[] {
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
  const [g0, g1, g2, g3, g4, g5, g6, g7] = groups;
  if (g0 === 0x2002) return [v4(g1, g2)];
  if (g0 === 0x2001 && g1 === 0) return [v4(g2, g3), v4(g6 ^ 0xffff, g7 ^ 0xffff)];
  if (g1 === 0 && g2 === 0 && g3 === 0 && ((g0 === 0 && g4 === 0 && (g5 === 0 || g5 === 0xffff)) || (g0 === 0 && g4 === 0xffff && g5 === 0))) return [v4(g6, g7)];
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return [v4(g6, g7)];
  return [];
}

/** Whether a resolved address may be connected to under `policy`. An IPv6 address that carries IPv4
 *  addresses (mapped, compatible, translated, NAT64, 6to4, Teredo) is judged by each of them as well. */
export function addressAllowed(address: string, policy: NetPolicy): boolean {
  if (!policy.denyPrivate) return true;
  const family = isIP(address);
  if (family === 0) return false;
  const ranges = privateList();
  if (family === 4) return !ranges.check(address, 'ipv4');
  if (ranges.check(address, 'ipv6')) return false;
  return embeddedIpv4(ipv6Groups(address)).every((inner) => !ranges.check(inner, 'ipv4'));
}
