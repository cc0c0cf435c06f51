// Unit tests of host/capabilities/net/net.ts beyond test/net-policy.test.mjs and test/net-property.test.mjs:
// the grammar of an allow.net entry at its edges (ports 0 and 65536, IPv6 with a port, a lone "*.", odd
// characters), hostAllowed on hosts as written, checkUrl with a port pattern and the default port written out,
// and, as properties, that normaliseHost is idempotent and that a pattern with a port allows that port only.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { checkUrl, DEFAULT_NET_POLICY, hostAllowed, normaliseHost, parsePattern } from '../../../../dist/host/capabilities/net/net.js';

const P = DEFAULT_NET_POLICY;

test('parsePattern: ports 1 to 65535; IPv6 bracketed, with a port; spaces trimmed; wildcards only as a leading "*."', () => {
  assert.deepEqual(parsePattern('x.test:1'), { host: 'x.test', wildcard: false, port: 1 });
  assert.deepEqual(parsePattern('x.test:65535'), { host: 'x.test', wildcard: false, port: 65535 });
  assert.deepEqual(parsePattern(' x.test '), { host: 'x.test', wildcard: false, port: undefined });
  assert.deepEqual(parsePattern('[::FFFF:127.0.0.1]:8080'), { host: '::ffff:7f00:1', wildcard: false, port: 8080 }, 'the canonical IPv6 form');
  assert.deepEqual(parsePattern('*.[::1]'), { host: '::1', wildcard: true, port: undefined });
  for (const bad of ['x.test:0', 'x.test:65536', 'x.test:', 'x.test:080x', '*..', ':80', 'x.test:80:81', '[::1', '[zz::1]', 'x test', 'x/y', 'a@b', '\u0000.test']) {
    assert.throws(() => parsePattern(bad), (e) => e.name === 'NetPatternError' && e.message.startsWith(`"${bad}" `), bad);
  }
  assert.deepEqual(parsePattern('x.test:00080'), { host: 'x.test', wildcard: false, port: 80 }, 'leading zeros read as the number');
});

// An operator's net = ["*"] meaning "any host" is an error that says how a wildcard is written, never a
// pattern that silently allows nothing.
test('parsePattern refuses a bare "*" or "*." (not a host, not a *.suffix)', () => {
  for (const bad of ['*', '*.', '*.:80', '*.*', 'a*.example.com']) assert.throws(() => parsePattern(bad), { name: 'NetPatternError', message: /a wildcard is written \*\.suffix/ }, bad);
  assert.deepEqual(parsePattern('*.example.com'), { host: 'example.com', wildcard: true, port: undefined });
});

test('hostAllowed: the host as written is normalised first (case, trailing dot, brackets, punycode)', () => {
  assert.ok(hostAllowed(['api.box.com'], 'API.Box.com.', 443));
  assert.ok(hostAllowed(['[::1]'], '[::1]', 80));
  assert.ok(hostAllowed(['[::1]:80'], '0:0:0:0:0:0:0:1', 80));
  assert.ok(hostAllowed(['xn--bcher-kva.example'], 'BÜCHER.example', 80));
  assert.ok(!hostAllowed(['*.box.com:443'], 'a.box.com', 80));
  assert.ok(hostAllowed(['*.box.com:443'], 'box.com', 443), 'a wildcard with a port covers the apex on that port');
  assert.ok(!hostAllowed([], 'box.com', 443));
  assert.throws(() => hostAllowed(['bad entry'], 'box.com', 443), /not a host/, 'a bad entry is an error, never a silent match');
});

test('checkUrl with a port pattern: the default port matches whether written or not; the refusal names host and port', () => {
  assert.equal(checkUrl('t', 'https://box.com:443/a', ['box.com:443'], P).href, 'https://box.com/a');
  assert.doesNotThrow(() => checkUrl('t', 'http://box.com:80/', ['box.com:80'], P));
  assert.throws(() => checkUrl('t', 'http://box.com:443/', ['box.com:80'], P), /tool "t" may not reach box\.com:443: it is not in allow\.net \(box\.com:80\)/);
  assert.throws(() => checkUrl('t', 'https://box.com/', ['box.com:80'], P), /may not reach box\.com: it is not in allow\.net/);
  assert.doesNotThrow(() => checkUrl('t', 'http://[::1]:8080/', ['[::1]:8080'], P));
  assert.throws(() => checkUrl('t', 'http://[::1]:8081/', ['[::1]:8080'], P), /may not reach \[::1\]:8081/);
  // Userinfo, a backslash and tabs are read as a browser reads them: the host is what is connected to.
  assert.throws(() => checkUrl('t', 'http://box.com:80@evil.test:80/', ['box.com:80'], P), /may not reach evil\.test/);
  assert.doesNotThrow(() => checkUrl('t', 'http://box.com\\@evil.test/', ['box.com'], P), 'WHATWG: "\\" ends the host in http(s)');
  assert.doesNotThrow(() => checkUrl('t', 'http://bo\tx.com/', ['box.com'], P), 'a tab is removed, as by a browser');
  assert.throws(() => checkUrl('t', 'https://box.com/', ['box.com', 'not a pattern'], P), /not a host/, 'a bad entry in the list refuses, whatever else matches');
});

test('normaliseHost is idempotent, and a host it accepts parses back as a pattern of itself (property)', () => {
  const label = fc.stringMatching(/^[a-zA-Z0-9-]{1,8}$/);
  const host = fc.oneof(
    fc.array(label, { minLength: 1, maxLength: 4 }).map((ls) => ls.join('.')),
    fc.ipV4(),
    fc.ipV6().map((h) => `[${h}]`),
    fc.constantFrom('BÜCHER.example', 'a.b.', 'xn--bcher-kva.example', '[::ffff:1.2.3.4]'),
  );
  fc.assert(fc.property(host, (h) => {
    const n = normaliseHost(h);
    assert.equal(normaliseHost(n), n);
    if (n === '') return;
    const entry = n.includes(':') ? `[${n}]` : n;
    assert.equal(parsePattern(entry).host, n);
    assert.ok(hostAllowed([entry], h, 443));
  }), { numRuns: 300 });
});

test('a pattern with a port allows exactly that port on every host it names (property)', () => {
  fc.assert(fc.property(fc.integer({ min: 1, max: 65535 }), fc.integer({ min: 1, max: 65535 }), fc.boolean(), (port, other, wildcard) => {
    const entry = `${wildcard ? '*.' : ''}box.test:${port}`;
    assert.equal(hostAllowed([entry], 'box.test', other), port === other);
    assert.equal(hostAllowed([entry], 'a.box.test', other), wildcard && port === other);
    const url = `http://box.test:${other}/`;
    assert.equal((() => { try { checkUrl('t', url, [entry], P); return true; } catch { return false; } })(), port === other);
  }), { numRuns: 300 });
});
