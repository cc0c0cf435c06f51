// Property tests of the allow.net policy (host/capabilities/net/net.ts) against a small reference model written
// from the rules in docs/capabilities.md: hosts compare case-insensitively without a trailing dot, `*.x`
// matches x and its subdomains, a port in the pattern must match, userinfo never matters, every spelling of
// an IPv4 address is that address, and private ranges are decided on the numeric address.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { PermissionError } from '../dist/host/errors.js';
import { addressAllowed, checkUrl, DEFAULT_NET_POLICY } from '../dist/host/capabilities/net/net.js';

const RUNS = 2000;
const P = DEFAULT_NET_POLICY;
const allowed = (url, net) => {
  try {
    checkUrl('t', url, net, P);
    return true;
  } catch (e) {
    assert.ok(e instanceof PermissionError, `${url}: ${e}`);
    return false;
  }
};

// ---- the reference model -------------------------------------------------------------------------------
const refMatch = (p, host, port) =>
  (p.port === undefined || p.port === port) && (host === p.host || (p.wildcard && host.endsWith('.' + p.host)));

// ---- generators ----------------------------------------------------------------------------------------
const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,6}[a-z0-9])?$/);
const domain = fc.array(label, { minLength: 1, maxLength: 4 }).map((ls) => ls.join('.'))
  .filter((d) => !/^[0-9.]+$/.test(d) && !/(^|\.)xn--/.test(d) && !/^[0-9]/.test(d.split('.').pop()));
const randomCase = (s, bits) => [...s].map((c, i) => ((bits >> (i % 30)) & 1 ? c.toUpperCase() : c)).join('');
const port = fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined });

test(`host matching agrees with the reference model (${RUNS} cases, with related hosts)`, () => {
  // Hosts are often built from the pattern (equal, a subdomain, a look-alike suffix) so matches are common.
  const related = fc.tuple(domain, label, fc.constantFrom('same', 'sub', 'glued', 'other')).map(([d, l, how]) =>
    ({ pattern: d, host: how === 'same' ? d : how === 'sub' ? `${l}.${d}` : how === 'glued' ? `${l}${d}` : `${d}.${l}x` }));
  fc.assert(fc.property(related, fc.boolean(), port, port, fc.integer(), fc.boolean(), fc.boolean(),
    ({ pattern, host }, wildcard, pport, uport, caseBits, dotPattern, dotHost) => {
      const entry = `${wildcard ? '*.' : ''}${randomCase(pattern, caseBits)}${dotPattern ? '.' : ''}${pport ? `:${pport}` : ''}`;
      const url = `http://${randomCase(host, ~caseBits)}${dotHost ? '.' : ''}${uport ? `:${uport}` : ''}/x`;
      const expected = refMatch({ host: pattern, wildcard, port: pport }, host, uport ?? 80);
      assert.equal(allowed(url, [entry]), expected, `${url} against ${entry}`);
    }), { numRuns: RUNS });
});

test(`userinfo never changes the decision (${RUNS} cases)`, () => {
  fc.assert(fc.property(domain, domain, fc.constantFrom('', ':pw', ':80'), (allowedHost, host, pw) => {
    const plain = allowed(`http://${host}/`, [allowedHost]);
    assert.equal(allowed(`http://${allowedHost}${pw}@${host}/`, [allowedHost]), plain);
  }), { numRuns: RUNS });
});

const dotted = (n) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
const spellings = (n) => [
  String(n),
  `0x${n.toString(16)}`,
  [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].map((b) => `0${b.toString(8)}`).join('.'),
  [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].map((b) => `0x${b.toString(16)}`).join('.'),
  `${n >>> 24}.${n & 0xffffff}`,
];

test(`every spelling of an IPv4 address is decided as that address (${RUNS} cases)`, () => {
  fc.assert(fc.property(fc.integer({ min: 1, max: 0xffffffff }), fc.integer({ min: 0, max: 0xffffffff }), (n, other) => {
    for (const s of spellings(n)) {
      assert.equal(allowed(`http://${s}/`, [dotted(n)]), true, `${s} is ${dotted(n)}`);
      if (other !== n) assert.equal(allowed(`http://${s}/`, [dotted(other)]), false, `${s} is not ${dotted(other)}`);
    }
  }), { numRuns: RUNS });
});

// Private ranges as numbers: [first address, prefix length].
const PRIVATE_V4 = [['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16],
  ['172.16.0.0', 12], ['192.0.0.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4]];
const toInt = (ip) => ip.split('.').reduce((a, b) => a * 256 + Number(b), 0);
const refPrivate = (n) => PRIVATE_V4.some(([net, bits]) => Math.floor(n / 2 ** (32 - bits)) === Math.floor(toInt(net) / 2 ** (32 - bits)));

test(`denyPrivate agrees with the reference ranges, also for IPv4-mapped IPv6 (${RUNS * 5} cases)`, () => {
  const deny = { ...P, denyPrivate: true };
  // Bias towards the edges of the ranges, where off-by-one errors live.
  const edges = PRIVATE_V4.flatMap(([net, bits]) => [toInt(net) - 1, toInt(net), toInt(net) + 2 ** (32 - bits) - 1, toInt(net) + 2 ** (32 - bits)])
    .filter((n) => n >= 0 && n <= 0xffffffff);
  const addr = fc.oneof(fc.integer({ min: 0, max: 0xffffffff }), fc.constantFrom(...edges));
  fc.assert(fc.property(addr, (n) => {
    const expected = !refPrivate(n);
    assert.equal(addressAllowed(dotted(n), deny), expected, dotted(n));
    assert.equal(addressAllowed(`::ffff:${dotted(n)}`, deny), expected, `::ffff:${dotted(n)}`);
  }), { numRuns: RUNS * 5 });
});

test(`any input string is either a URL decision or a PermissionError, never a crash (${RUNS} cases)`, () => {
  const junk = fc.oneof(fc.string(), fc.webUrl(), fc.string({ unit: 'binary' }), fc.constantFrom('http://[::1', 'http://%zz/', 'http://a b/', 'http:///x', 'javascript:alert(1)', 'file:///etc/passwd'));
  fc.assert(fc.property(junk, fc.array(fc.oneof(domain, fc.constant('*.example.com'), fc.constant('127.0.0.1:8080')), { maxLength: 3 }), (input, net) => {
    allowed(input, net);
  }), { numRuns: RUNS });
});
