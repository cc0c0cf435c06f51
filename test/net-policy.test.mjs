// The net policy as pure functions (host/capabilities/net/net.ts), called directly.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addressAllowed, checkUrl, DEFAULT_NET_POLICY, parsePattern } from '../dist/host/capabilities/net/net.js';

const P = DEFAULT_NET_POLICY;
const ok = (url, net) => assert.doesNotThrow(() => checkUrl('t', url, net, P), `${url} should pass ${net}`);
const no = (url, net, re = /may not reach|not a valid|only http/) => assert.throws(() => checkUrl('t', url, net, P), re, `${url} should fail ${net}`);

test('exact hosts, wildcards and the apex', () => {
  ok('https://api.box.com/x', ['api.box.com']);
  no('https://evil.box.com/x', ['api.box.com']);
  ok('https://a.box.com/', ['*.box.com']);
  ok('https://a.b.box.com/', ['*.box.com']);
  ok('https://box.com/', ['*.box.com']);
  no('https://notbox.com/', ['*.box.com']);
  no('https://box.com.evil.net/', ['*.box.com']);
  no('https://evilbox.com/', ['*.box.com']);
});

test('normalisation: case, trailing dot, IDNA, userinfo', () => {
  ok('https://API.Box.COM/', ['api.box.com']);
  ok('https://api.box.com./', ['api.box.com']);
  ok('https://api.box.com/', ['API.BOX.COM.']);
  ok('https://xn--bcher-kva.example/', ['bücher.example']);
  ok('https://bücher.example/', ['xn--bcher-kva.example']);
  no('http://allowed.com@evil.com/', ['allowed.com']);
  no('http://allowed.com:80@evil.com/', ['allowed.com']);
  ok('http://evil.com@allowed.com/', ['allowed.com']);
});

test('IPv4 in decimal, octal and hex forms is the same address; IPv6 literals', () => {
  for (const form of ['http://127.0.0.1/', 'http://2130706433/', 'http://0x7f000001/', 'http://0177.0.0.1/', 'http://0x7f.0.0.1/', 'http://127.1/']) {
    ok(form, ['127.0.0.1']);
    no(form, ['localhost']);
  }
  ok('http://[::1]:8080/', ['[::1]']);
  ok('http://[0:0:0:0:0:0:0:1]/', ['[0::1]']);
  assert.throws(() => parsePattern('::1'), /not a host/);
  no('http://[::ffff:127.0.0.1]/', ['127.0.0.1']);
});

test('ports: an entry without a port allows any; host:port allows only that one', () => {
  ok('http://localhost:8080/', ['localhost']);
  ok('http://localhost:8080/', ['localhost:8080']);
  no('http://localhost:8081/', ['localhost:8080']);
  ok('https://box.com/', ['box.com:443']);
  no('http://box.com/', ['box.com:443']);
});

test('schemes other than http and https, and invalid URLs, are refused', () => {
  for (const u of ['file:///etc/passwd', 'ftp://box.com/', 'data:text/plain,hi', 'javascript:alert(1)', 'ws://box.com/']) no(u, ['box.com']);
  no('not a url', ['box.com']);
  no('/relative', ['box.com']);
});

test('no allow.net: no network, unless the operator opts into the permissive default', () => {
  assert.throws(() => checkUrl('t', 'https://box.com/', [], P), /declares no allow.net, so it has no network access/);
  assert.doesNotThrow(() => checkUrl('t', 'https://box.com/', [], { ...P, emptyMeansUnrestricted: true }));
});

test('a refusal quotes the manifest line that allows the host, and the operator\'s line when a grant would refuse it too', () => {
  assert.throws(() => checkUrl('t', 'https://box.com/', [], P), { message: 'tool "t" declares no allow.net, so it has no network access (box.com refused); to allow it, add allow: { net: ["box.com"] } to the tool\'s manifest' });
  assert.throws(() => checkUrl('t', 'http://box.com:8080/', ['a.com', '*.b.com'], P), { message: 'tool "t" may not reach box.com:8080: it is not in allow.net (a.com, *.b.com); to allow it, add allow: { net: ["a.com", "*.b.com", "box.com:8080"] } to the tool\'s manifest' });
  assert.throws(() => checkUrl('t', 'http://[::1]/', ['a.com'], P, (item) => `add "${item}" to net`), /add allow: \{ net: \["a\.com", "\[::1\]"\] \} to the tool's manifest, and the operator must grant it too: add "\[::1\]" to net$/);
});

test('invalid allow.net entries are refused', () => {
  for (const bad of ['http://box.com', 'box.com/path', 'a b', 'box.com:99999', 'user@box.com', '']) assert.throws(() => parsePattern(bad), undefined, bad);
  assert.deepEqual(parsePattern('*.Box.com.:8443'), { host: 'box.com', wildcard: true, port: 8443 });
});

test('denyPrivate refuses loopback, private, link-local and mapped addresses, and IPv6 forms that carry a private IPv4 address', () => {
  const deny = { ...P, denyPrivate: true };
  for (const a of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '0.0.0.0', '::1', 'fe80::1', 'fd00::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1',
    // IPv4-compatible, IPv4-translated, NAT64 (well-known and local-use), 6to4, site-local; hex and dotted spellings
    '::7f00:1', '::127.0.0.1', '::ffff:0:7f00:1', '::ffff:0:10.0.0.1', '64:ff9b::7f00:1', '64:FF9B::192.168.0.1', '64:ff9b:1::8.8.8.8', '2002:7f00:1::', '2002:a00:1:1::1', 'fec0::1', '::ffff:7f00:1',
    // Teredo: a private server (groups 2-3), or a private client (groups 6-7, every bit inverted: 80ff:fffe is 127.0.0.1)
    '2001:0:7f00:1::', '2001:0:a00:1:0:0:808:808', '2001:0:808:808:8000:ffff:80ff:fffe', '2001:0000:0808:0808:0:0:3fff:fffe', '2001:0:808:808::3f57:fffe']) {
    assert.equal(addressAllowed(a, deny), false, a);
    assert.equal(addressAllowed(a, P), true, `${a} without denyPrivate`);
  }
  for (const a of ['93.184.216.34', '2606:2800:220:1::1', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1', '::8.8.8.8', '2001:db8::1',
    // Teredo with a public server and a public client (f7f7:f7f7 is 8.8.8.8 inverted); 2001:1:: is not Teredo
    '2001:0:808:808::f7f7:f7f7', '2001:1:7f00:1::80ff:fffe']) assert.equal(addressAllowed(a, deny), true, a);
});
