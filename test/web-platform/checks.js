// Web-platform checks, run unchanged in a kiln guest (as a `kiln run` script) and in Node by
// test/web-platform.test.mjs, which compares the two result lists. Each check is [name, fn]; fn's value is
// reduced by `show` to a string, so both sides are compared the same way. No check depends on time,
// randomness or the network.
const enc = (s) => new TextEncoder().encode(s);
const hex = (buf) => Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, '0')).join('');
const dec = (bytes, label, opts) => new TextDecoder(label, opts).decode(new Uint8Array(bytes));
const cps = (s) => Array.from(s, (c) => c.codePointAt(0));
const url = (input, base) => new URL(input, base).href;
const set = (input, prop, value) => { const u = new URL(input); u[prop] = value; return u.href; };
const hdrs = (h) => [...h];
const readAll = async (stream) => { const out = []; for await (const c of stream) out.push(typeof c === 'string' ? c : Array.from(c)); return out; };
const tick = () => new Promise((r) => setTimeout(r, 0));

const CHECKS = [
  // ---- TextEncoder / TextDecoder ----
  ['encode ascii', () => Array.from(enc('abc'))],
  ['encode 2-byte', () => Array.from(enc('é'))],
  ['encode 3-byte', () => Array.from(enc('€'))],
  ['encode 4-byte', () => Array.from(enc('😀'))],
  ['encode lone high surrogate', () => Array.from(enc('a\ud800b'))],
  ['encode lone low surrogate', () => Array.from(enc('\udc00'))],
  ['encode undefined', () => Array.from(new TextEncoder().encode())],
  ['encode number', () => Array.from(new TextEncoder().encode(12))],
  ['encoder encoding', () => new TextEncoder().encoding],
  ['encodeInto exact', () => { const b = new Uint8Array(3); return [new TextEncoder().encodeInto('€', b), Array.from(b)]; }],
  ['encodeInto partial char', () => { const b = new Uint8Array(4); return [new TextEncoder().encodeInto('€€', b), Array.from(b)]; }],
  ['encodeInto surrogate pair', () => { const b = new Uint8Array(5); return [new TextEncoder().encodeInto('a😀b', b), Array.from(b)]; }],
  ['encodeInto empty dest', () => new TextEncoder().encodeInto('abc', new Uint8Array(0))],
  ['encodeInto subarray', () => { const b = new Uint8Array(6); new TextEncoder().encodeInto('xy', b.subarray(2)); return Array.from(b); }],
  ['decode ascii', () => dec([104, 105])],
  ['decode 2-byte', () => cps(dec([0xc3, 0xa9]))],
  ['decode 4-byte', () => cps(dec([0xf0, 0x9f, 0x98, 0x80]))],
  ['decode overlong 2', () => cps(dec([0xc0, 0x80]))],
  ['decode overlong 3', () => cps(dec([0xe0, 0x80, 0x80]))],
  ['decode surrogate', () => cps(dec([0xed, 0xa0, 0x80]))],
  ['decode above max', () => cps(dec([0xf4, 0x90, 0x80, 0x80]))],
  ['decode truncated 4', () => cps(dec([0xf0, 0x9f, 0x98]))],
  ['decode truncated then ascii', () => cps(dec([0xe2, 0x82, 0x41]))],
  ['decode lone continuation', () => cps(dec([0x80, 0x41]))],
  ['decode ff', () => cps(dec([0xff]))],
  ['decode BOM stripped', () => cps(dec([0xef, 0xbb, 0xbf, 0x41]))],
  ['decode BOM kept ignoreBOM', () => cps(dec([0xef, 0xbb, 0xbf, 0x41], 'utf-8', { ignoreBOM: true }))],
  ['decode fatal ok', () => dec([0x41], 'utf-8', { fatal: true })],
  ['decode fatal invalid', () => dec([0xff], 'utf-8', { fatal: true })],
  ['decode fatal truncated', () => dec([0xe2, 0x82], 'utf-8', { fatal: true })],
  ['decode stream split 3-byte', () => { const d = new TextDecoder(); return cps(d.decode(new Uint8Array([0xe2, 0x82]), { stream: true }) + d.decode(new Uint8Array([0xac]))); }],
  ['decode stream byte by byte', () => { const d = new TextDecoder(); let s = ''; for (const b of [0xf0, 0x9f, 0x98, 0x80, 0x41]) s += d.decode(new Uint8Array([b]), { stream: true }); return cps(s + d.decode()); }],
  ['decode stream truncated at end', () => { const d = new TextDecoder(); return cps(d.decode(new Uint8Array([0xe2]), { stream: true }) + d.decode()); }],
  ['decode stream BOM once', () => { const d = new TextDecoder(); return cps(d.decode(new Uint8Array([0xef, 0xbb]), { stream: true }) + d.decode(new Uint8Array([0xbf, 0xef, 0xbb, 0xbf]))); }],
  ['decode reuse after flush BOM', () => { const d = new TextDecoder(); d.decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x41])); return cps(d.decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x42]))); }],
  ['decode ArrayBuffer', () => new TextDecoder().decode(new Uint8Array([104, 105]).buffer)],
  ['decode DataView', () => new TextDecoder().decode(new DataView(new Uint8Array([0, 104, 105]).buffer, 1))],
  ['decode Uint16Array', () => new TextDecoder().decode(new Uint16Array([0x6968]))],
  ['decode undefined', () => new TextDecoder().decode()],
  ['decoder labels', () => ['utf8', ' UTF-8 ', 'unicode-1-1-utf-8'].map((l) => new TextDecoder(l).encoding)],
  ['decoder bad label', () => new TextDecoder('nope')],
  ['decoder utf-16le', () => cps(dec([0x41, 0, 0x3d, 0xd8, 0, 0xde], 'utf-16le'))],
  ['decoder utf-16le odd', () => cps(dec([0x41, 0, 0x42], 'utf-16le'))],
  ['decoder utf-16le lone surrogate', () => cps(dec([0x00, 0xd8, 0x41, 0], 'utf-16le'))],
  ['decoder props', () => { const d = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }); return [d.encoding, d.fatal, d.ignoreBOM]; }],
  ['decode large', () => { const b = new Uint8Array(300000).fill(0x61); b[7] = 0xc3; b[8] = 0xa9; const s = new TextDecoder().decode(b); return [s.length, s.charCodeAt(7)]; }],

  // ---- atob / btoa ----
  ['btoa', () => btoa('hello world')],
  ['btoa empty', () => btoa('')],
  ['btoa latin1', () => btoa('\u00ff\u00fe')],
  ['btoa pad 1', () => btoa('ab')],
  ['btoa pad 2', () => btoa('a')],
  ['btoa non-latin1', () => btoa('€')],
  ['btoa number', () => btoa(12)],
  ['atob', () => atob('aGVsbG8gd29ybGQ=')],
  ['atob no padding', () => atob('YWI')],
  ['atob whitespace', () => atob(' YW\nJj ')],
  ['atob bad length', () => atob('a')],
  ['atob bad char', () => atob('ab!c')],
  ['atob bad padding', () => atob('YQ===')],
  ['atob padding mid', () => atob('YQ==YQ==')],
  ['atob binary', () => cps(atob('/+8='))],
  ['atob null', () => cps(atob(null))],
  ['atob roundtrip bytes', () => { let s = ''; for (let i = 0; i < 256; i++) s += String.fromCharCode(i); return atob(btoa(s)) === s; }],
  ['atob error class', () => { try { atob('*'); } catch (e) { return [e instanceof DOMException, e.name, e.code]; } }],

  // ---- URL ----
  ['url basic', () => url('https://example.com/a/b?c=d#e')],
  ['url parts', () => { const u = new URL('https://user:pw@example.com:8080/p/a?q=1#h'); return [u.protocol, u.username, u.password, u.host, u.hostname, u.port, u.pathname, u.search, u.hash, u.origin]; }],
  ['url relative', () => url('../x?y', 'https://a.test/b/c/d')],
  ['url relative scheme', () => url('//b.test/p', 'https://a.test/')],
  ['url default port dropped', () => url('https://a.test:443/')],
  ['url idna', () => url('https://bücher.example/')],
  ['url ipv6', () => url('http://[::1]:80/')],
  ['url ipv4 numbers', () => url('http://0x7f.1/')],
  ['url dot segments', () => url('https://a.test/a/./b/../c')],
  ['url percent-encodes space', () => url('https://a.test/a b?c d#e f')],
  ['url backslash', () => url('https:\\\\a.test\\b')],
  ['url invalid', () => new URL('not a url')],
  ['url invalid port', () => new URL('https://a.test:99999/')],
  ['url file', () => url('file:///etc/passwd')],
  ['url data', () => url('data:text/plain,hi')],
  ['url mailto', () => { const u = new URL('mailto:a@b.test'); return [u.protocol, u.pathname, u.host]; }],
  ['url canParse', () => [URL.canParse('https://a'), URL.canParse('nope'), URL.canParse('/x', 'https://a.test')]],
  ['url toJSON', () => JSON.stringify({ u: new URL('https://a.test/x') })],
  ['url toString', () => String(new URL('https://a.test'))],
  ['url set pathname', () => set('https://a.test/x?q#h', 'pathname', '/y/z')],
  ['url set pathname with query chars', () => set('https://a.test/', 'pathname', '/x?y=1#z')],
  ['url set pathname no slash', () => set('https://a.test/', 'pathname', 'abc')],
  ['url set search', () => set('https://a.test/', 'search', 'a=1')],
  ['url set search with ?', () => set('https://a.test/', 'search', '?a=1')],
  ['url set search empty', () => set('https://a.test/?a=1', 'search', '')],
  ['url set search with #', () => set('https://a.test/', 'search', 'a#b')],
  ['url set hash', () => set('https://a.test/', 'hash', 'top')],
  ['url set hash empty', () => set('https://a.test/#x', 'hash', '')],
  ['url set hash space', () => set('https://a.test/', 'hash', 'a b')],
  ['url set hostname', () => set('https://a.test/p', 'hostname', 'b.test')],
  ['url set hostname with path', () => set('https://a.test/p', 'hostname', 'evil.test/zzz')],
  ['url set hostname with port', () => set('https://a.test/p', 'hostname', 'b.test:99')],
  ['url set host with port', () => set('https://a.test/p', 'host', 'b.test:8080')],
  ['url set port', () => set('https://a.test/', 'port', '8080')],
  ['url set port trailing junk', () => set('https://a.test/', 'port', '8080abc')],
  ['url set port default', () => set('https://a.test:8080/', 'port', '443')],
  ['url set port empty', () => set('https://a.test:8080/', 'port', '')],
  ['url set port invalid', () => set('https://a.test:8080/', 'port', 'abc')],
  ['url set port too big', () => set('https://a.test:8080/', 'port', '65536')],
  ['url set username', () => set('https://a.test/', 'username', 'us er@:x')],
  ['url set password', () => set('https://a.test/', 'password', 'p@ss:w/rd')],
  ['url set protocol', () => set('https://a.test/', 'protocol', 'http')],
  ['url set protocol special to non', () => set('https://a.test/', 'protocol', 'foo')],
  ['url set href', () => set('https://a.test/', 'href', 'http://b.test/x')],
  ['url set href invalid', () => set('https://a.test/', 'href', 'nope')],
  ['url searchParams live', () => { const u = new URL('https://a.test/?a=1'); u.searchParams.append('b', '2 3'); return [u.href, u.search]; }],
  ['url searchParams after search set', () => { const u = new URL('https://a.test/?a=1'); u.search = 'x=9'; return [...u.searchParams]; }],
  ['url searchParams delete all', () => { const u = new URL('https://a.test/?a=1'); u.searchParams.delete('a'); return u.href; }],
  ['usp parse', () => [...new URLSearchParams('a=1&b=2&a=3')]],
  ['usp plus and percent', () => [...new URLSearchParams('a=b+c&d=%20e%zz')]],
  ['usp leading ?', () => [...new URLSearchParams('?x=1')]],
  ['usp from object', () => new URLSearchParams({ a: '1', b: 'x y' }).toString()],
  ['usp from pairs', () => new URLSearchParams([['a', '1'], ['a', '2']]).toString()],
  ['usp bad pair', () => new URLSearchParams([['a']])],
  ['usp get/getAll/has', () => { const p = new URLSearchParams('a=1&a=2'); return [p.get('a'), p.getAll('a'), p.has('a'), p.has('a', '2'), p.has('a', '3'), p.get('z')]; }],
  ['usp set', () => { const p = new URLSearchParams('a=1&b=2&a=3'); p.set('a', '9'); return p.toString(); }],
  ['usp delete with value', () => { const p = new URLSearchParams('a=1&a=2'); p.delete('a', '1'); return p.toString(); }],
  ['usp sort stable', () => { const p = new URLSearchParams('c=1&a=2&b=3&a=1'); p.sort(); return p.toString(); }],
  ['usp size', () => new URLSearchParams('a=1&b=2').size],
  ['usp encoding', () => new URLSearchParams({ k: "!'()~*-._ +&=é" }).toString()],
  ['usp empty pieces', () => [...new URLSearchParams('&&a&=b&')]],
  ['usp forEach', () => { const out = []; new URLSearchParams('a=1&b=2').forEach((v, k) => out.push(k + v)); return out; }],
  ['usp keys/values', () => { const p = new URLSearchParams('a=1&b=2'); return [[...p.keys()], [...p.values()]]; }],

  // ---- Headers ----
  ['headers lowercase', () => hdrs(new Headers({ 'Content-Type': 'text/plain' }))],
  ['headers combine', () => { const h = new Headers(); h.append('a', '1'); h.append('A', '2'); return h.get('a'); }],
  ['headers sorted', () => hdrs(new Headers([['b', '1'], ['a', '2'], ['c', '3']]))],
  ['headers set-cookie separate', () => { const h = new Headers(); h.append('set-cookie', 'a=1'); h.append('set-cookie', 'b=2'); return [hdrs(h), h.getSetCookie(), h.get('set-cookie')]; }],
  ['headers trim value', () => new Headers({ a: '  x \t' }).get('a')],
  ['headers invalid name', () => new Headers({ 'a b': '1' })],
  ['headers invalid value', () => new Headers({ a: 'x\ny' })],
  ['headers get missing', () => new Headers().get('x')],
  ['headers has/delete', () => { const h = new Headers({ a: '1' }); h.delete('A'); return h.has('a'); }],
  ['headers set replaces', () => { const h = new Headers([['a', '1'], ['a', '2']]); h.set('a', '3'); return hdrs(h); }],
  ['headers from headers', () => hdrs(new Headers(new Headers({ x: '1' })))],
  ['headers forEach', () => { const out = []; new Headers({ b: '2', a: '1' }).forEach((v, k) => out.push(k + '=' + v)); return out; }],
  ['headers bad pair', () => new Headers([['a']])],

  // ---- Request / Response ----
  ['request defaults', () => { const r = new Request('https://a.test/x'); return [r.url, r.method, r.redirect, r.credentials, r.bodyUsed, r.body]; }],
  ['request method upper', () => new Request('https://a.test', { method: 'post' }).method],
  ['request GET with body', () => new Request('https://a.test', { body: 'x' })],
  ['request relative url', () => new Request('/x')],
  ['request text body', async () => { const r = new Request('https://a.test', { method: 'POST', body: 'hi' }); return [r.headers.get('content-type'), await r.text()]; }],
  ['request usp body', async () => { const r = new Request('https://a.test', { method: 'POST', body: new URLSearchParams('a=1') }); return [r.headers.get('content-type'), await r.text()]; }],
  ['request clone', async () => { const r = new Request('https://a.test', { method: 'POST', body: 'x' }); const c = r.clone(); return [await r.text(), await c.text()]; }],
  ['request signal', () => typeof new Request('https://a.test').signal.aborted],
  ['response defaults', () => { const r = new Response(); return [r.status, r.ok, r.statusText, r.type, r.url, r.redirected, r.body]; }],
  ['response text', async () => new Response('héllo').text()],
  ['response json', async () => new Response('{"a":[1]}').json()],
  ['response bad json', async () => new Response('{').json()],
  ['response arrayBuffer', async () => Array.from(new Uint8Array(await new Response('ab').arrayBuffer()))],
  ['response blob', async () => { const b = await new Response('abc', { headers: { 'content-type': 'text/x' } }).blob(); return [b.size, b.type]; }],
  ['response bodyUsed', async () => { const r = new Response('x'); await r.text(); return [r.bodyUsed, await r.text().catch((e) => e.name)]; }],
  ['response status range', () => new Response('', { status: 700 })],
  ['response Response.json', async () => { const r = Response.json({ a: 1 }, { status: 201 }); return [r.status, r.headers.get('content-type'), await r.text()]; }],
  ['response Response.error', () => { const r = Response.error(); return [r.status, r.type, r.ok]; }],
  ['response Response.redirect', () => { const r = Response.redirect('https://a.test/x', 301); return [r.status, r.headers.get('location')]; }],
  ['response redirect bad status', () => Response.redirect('https://a.test/', 200)],
  ['response clone', async () => { const r = new Response('x'); const c = r.clone(); return [await r.text(), await c.text()]; }],
  ['response content-type string', () => new Response('x').headers.get('content-type')],
  ['response content-type bytes', () => new Response(new Uint8Array([1])).headers.get('content-type')],
  ['response stream body', async () => { const s = new ReadableStream({ start(c) { c.enqueue(enc('a')); c.enqueue(enc('b')); c.close(); } }); return new Response(s).text(); }],
  ['response body is stream', async () => { const r = new Response('abc'); return [r.body instanceof ReadableStream, (await readAll(r.body)).length]; }],
  ['response BOM text', async () => cps(await new Response(new Uint8Array([0xef, 0xbb, 0xbf, 0x41])).text())],
  ['response formData body', async () => { const fd = new FormData(); fd.append('a', '1'); const r = new Response(fd); return /^multipart\/form-data; boundary=/.test(r.headers.get('content-type')); }],

  // ---- Blob / File / FormData ----
  ['blob parts', async () => { const b = new Blob(['ab', new Uint8Array([99]), new Blob(['d'])]); return [b.size, await b.text()]; }],
  ['blob type lowercased', () => new Blob([], { type: 'Text/Plain' }).type],
  ['blob slice', async () => new Blob(['abcdef']).slice(1, 3).text()],
  ['blob slice negative', async () => new Blob(['abcdef']).slice(-2).text()],
  ['blob arrayBuffer', async () => Array.from(new Uint8Array(await new Blob(['hi']).arrayBuffer()))],
  ['blob stream', async () => (await readAll(new Blob(['xy']).stream())).flat()],
  ['file props', () => { const f = new File(['abc'], 'a.txt', { type: 'text/plain', lastModified: 5 }); return [f.name, f.size, f.type, f.lastModified, f instanceof Blob]; }],
  ['formdata basics', () => { const f = new FormData(); f.append('a', '1'); f.append('a', '2'); f.set('b', '3'); return [f.get('a'), f.getAll('a'), f.has('b'), [...f.keys()]]; }],
  ['formdata delete', () => { const f = new FormData(); f.append('a', '1'); f.delete('a'); return [...f]; }],
  ['formdata blob becomes file', () => { const f = new FormData(); f.append('f', new Blob(['x']), 'n.bin'); const v = f.get('f'); return [v instanceof File, v.name, v.size]; }],
  ['formdata blob default name', () => { const f = new FormData(); f.append('f', new Blob(['x'])); return f.get('f').name; }],
  ['formdata number value', () => { const f = new FormData(); f.append('n', 5); return typeof f.get('n'); }],

  // ---- AbortController / AbortSignal ----
  ['abort basics', () => { const c = new AbortController(); const before = c.signal.aborted; c.abort(); return [before, c.signal.aborted, c.signal.reason.name, c.signal.reason instanceof DOMException]; }],
  ['abort custom reason', () => { const c = new AbortController(); c.abort('why'); return c.signal.reason; }],
  ['abort event once', () => { const c = new AbortController(); let n = 0; c.signal.addEventListener('abort', () => n++); c.abort(); c.abort(); return n; }],
  ['abort onabort', () => { const c = new AbortController(); let t = null; c.signal.onabort = (e) => { t = e.type; }; c.abort(); return t; }],
  ['abort throwIfAborted', () => { const c = new AbortController(); c.abort(new Error('x')); try { c.signal.throwIfAborted(); } catch (e) { return e.message; } }],
  ['AbortSignal.abort', () => { const s = AbortSignal.abort(); return [s.aborted, s.reason.name]; }],
  ['AbortSignal.any', () => { const a = new AbortController(), b = new AbortController(); const s = AbortSignal.any([a.signal, b.signal]); b.abort('b'); return [s.aborted, s.reason]; }],
  ['AbortSignal.any already', () => AbortSignal.any([AbortSignal.abort('x')]).reason],
  ['AbortSignal.timeout type', () => { const s = AbortSignal.timeout(100000); return [s.aborted, s instanceof AbortSignal]; }],
  ['AbortSignal constructor', () => new AbortSignal()],

  // ---- events ----
  ['event defaults', () => { const e = new Event('x'); return [e.type, e.bubbles, e.cancelable, e.defaultPrevented, e.isTrusted, e.eventPhase, e.target]; }],
  ['event preventDefault not cancelable', () => { const e = new Event('x'); e.preventDefault(); return e.defaultPrevented; }],
  ['event preventDefault cancelable', () => { const e = new Event('x', { cancelable: true }); e.preventDefault(); return [e.defaultPrevented, new EventTarget().dispatchEvent(e)]; }],
  ['event no type', () => new Event()],
  ['customevent detail', () => [new CustomEvent('x', { detail: { a: 1 } }).detail, new CustomEvent('y').detail]],
  ['eventtarget order', () => { const t = new EventTarget(); const out = []; t.addEventListener('e', () => out.push(1)); t.addEventListener('e', () => out.push(2)); t.dispatchEvent(new Event('e')); return out; }],
  ['eventtarget dedupe', () => { const t = new EventTarget(); let n = 0; const f = () => n++; t.addEventListener('e', f); t.addEventListener('e', f); t.dispatchEvent(new Event('e')); return n; }],
  ['eventtarget capture distinct', () => { const t = new EventTarget(); let n = 0; const f = () => n++; t.addEventListener('e', f); t.addEventListener('e', f, true); t.dispatchEvent(new Event('e')); return n; }],
  ['eventtarget once', () => { const t = new EventTarget(); let n = 0; t.addEventListener('e', () => n++, { once: true }); t.dispatchEvent(new Event('e')); t.dispatchEvent(new Event('e')); return n; }],
  ['eventtarget remove', () => { const t = new EventTarget(); let n = 0; const f = () => n++; t.addEventListener('e', f); t.removeEventListener('e', f); t.dispatchEvent(new Event('e')); return n; }],
  ['eventtarget handleEvent', () => { const t = new EventTarget(); let got; t.addEventListener('e', { handleEvent(e) { got = e.type; } }); t.dispatchEvent(new Event('e')); return got; }],
  ['eventtarget signal', () => { const t = new EventTarget(); const c = new AbortController(); let n = 0; t.addEventListener('e', () => n++, { signal: c.signal }); c.abort(); t.dispatchEvent(new Event('e')); return n; }],
  ['eventtarget stopImmediate', () => { const t = new EventTarget(); const out = []; t.addEventListener('e', (e) => { out.push(1); e.stopImmediatePropagation(); }); t.addEventListener('e', () => out.push(2)); t.dispatchEvent(new Event('e')); return out; }],
  ['eventtarget target/currentTarget', () => { const t = new EventTarget(); let r; t.addEventListener('e', (e) => { r = [e.target === t, e.currentTarget === t, e.eventPhase]; }); const e = new Event('e'); t.dispatchEvent(e); return [r, e.currentTarget, e.eventPhase]; }],
  ['eventtarget this', () => { const t = new EventTarget(); let same; t.addEventListener('e', function () { same = this === t; }); t.dispatchEvent(new Event('e')); return same; }],
  ['eventtarget dispatch non-event', () => new EventTarget().dispatchEvent({ type: 'x' })],
  ['eventtarget null listener', () => { new EventTarget().addEventListener('e', null); return 'ok'; }],
  ['eventtarget subclass', () => { class T extends EventTarget {} const t = new T(); let n = 0; t.addEventListener('x', () => n++); t.dispatchEvent(new Event('x')); return n; }],
  ['event listener added during dispatch', () => { const t = new EventTarget(); let n = 0; t.addEventListener('e', () => t.addEventListener('e', () => n++)); t.dispatchEvent(new Event('e')); return n; }],
  ['domexception', () => { const e = new DOMException('m', 'NotFoundError'); return [e.name, e.message, e.code, e instanceof Error, DOMException.NOT_FOUND_ERR]; }],
  ['domexception default', () => { const e = new DOMException(); return [e.name, e.message, e.code]; }],

  // ---- streams ----
  ['readable enqueue/read', async () => { const s = new ReadableStream({ start(c) { c.enqueue(1); c.enqueue(2); c.close(); } }); const r = s.getReader(); return [await r.read(), await r.read(), await r.read()]; }],
  ['readable pull', async () => { let i = 0; const s = new ReadableStream({ pull(c) { if (i < 3) c.enqueue(i++); else c.close(); } }); return readAll(s); }],
  ['readable locked', () => { const s = new ReadableStream(); s.getReader(); return [s.locked, (() => { try { s.getReader(); } catch (e) { return e.name; } })()]; }],
  ['readable releaseLock', () => { const s = new ReadableStream(); s.getReader().releaseLock(); return s.locked; }],
  ['readable error', async () => { const s = new ReadableStream({ start(c) { c.error(new TypeError('boom')); } }); return s.getReader().read().catch((e) => [e.name, e.message]); }],
  ['readable cancel', async () => { let why; const s = new ReadableStream({ cancel(r) { why = r; } }); await s.cancel('stop'); return why; }],
  ['readable async iterator', async () => readAll(new ReadableStream({ start(c) { c.enqueue('a'); c.enqueue('b'); c.close(); } }))],
  ['readable tee', async () => { const [a, b] = new ReadableStream({ start(c) { c.enqueue(1); c.close(); } }).tee(); return [await readAll(a), await readAll(b)]; }],
  ['readable from pipeThrough', async () => { const t = new TransformStream({ transform(ch, c) { c.enqueue(ch * 2); } }); return readAll(new ReadableStream({ start(c) { c.enqueue(1); c.enqueue(2); c.close(); } }).pipeThrough(t)); }],
  ['writable basic', async () => { const got = []; const w = new WritableStream({ write(ch) { got.push(ch); } }); const wr = w.getWriter(); await wr.write('a'); await wr.write('b'); await wr.close(); return got; }],
  ['pipeTo', async () => { const got = []; await new ReadableStream({ start(c) { c.enqueue('x'); c.close(); } }).pipeTo(new WritableStream({ write(ch) { got.push(ch); } })); return got; }],
  ['TextDecoderStream', async () => readAll(new Blob(['h\u00e9'], {}).stream().pipeThrough(new TextDecoderStream()))],
  ['TextEncoderStream', async () => (await readAll(new ReadableStream({ start(c) { c.enqueue('é'); c.close(); } }).pipeThrough(new TextEncoderStream()))).flat()],
  ['ReadableStream.from', async () => readAll(ReadableStream.from(['a', 'b']))],

  // ---- structuredClone ----
  ['clone primitives', () => [structuredClone(1), structuredClone('s'), structuredClone(null), structuredClone(undefined), structuredClone(true), String(structuredClone(10n))]],
  ['clone nested', () => structuredClone({ a: [1, { b: 2 }], c: 'x' })],
  ['clone date', () => { const d = structuredClone(new Date(5)); return [d instanceof Date, d.getTime()]; }],
  ['clone regexp', () => { const r = structuredClone(/a+/gi); return [r instanceof RegExp, r.source, r.flags, r.lastIndex]; }],
  ['clone map/set', () => { const c = structuredClone({ m: new Map([['k', 1]]), s: new Set([1, 2]) }); return [[...c.m], [...c.s]]; }],
  ['clone cycle', () => { const a = { n: 1 }; a.self = a; const c = structuredClone(a); return [c.self === c, c !== a]; }],
  ['clone shared ref', () => { const x = {}; const c = structuredClone([x, x]); return c[0] === c[1]; }],
  ['clone typed array', () => { const u = structuredClone(new Uint16Array([1, 2])); return [u.constructor.name, Array.from(u)]; }],
  ['clone typed array view offset', () => { const b = new Uint8Array([1, 2, 3, 4]); const v = structuredClone(b.subarray(1, 3)); return [Array.from(v), v.byteOffset, v.buffer.byteLength]; }],
  ['clone arraybuffer', () => { const a = new Uint8Array([1, 2]).buffer; const c = structuredClone(a); return [c instanceof ArrayBuffer, c !== a, Array.from(new Uint8Array(c))]; }],
  ['clone dataview', () => { const d = structuredClone(new DataView(new ArrayBuffer(4), 1, 2)); return [d instanceof DataView, d.byteOffset, d.byteLength]; }],
  ['clone error', () => { const e = structuredClone(new RangeError('m')); return [e instanceof RangeError, e.name, e.message]; }],
  ['clone error custom name', () => { const x = new Error('m'); x.name = 'Custom'; const e = structuredClone(x); return [e.name, e.constructor.name]; }],
  ['clone wrappers', () => { const [a, b, c] = structuredClone([Object(1), Object('s'), Object(true)]); return [typeof a, a.valueOf(), typeof b, b.valueOf(), c.valueOf()]; }],
  ['clone class instance', () => { class P { constructor() { this.x = 1; } get y() { return 2; } } const c = structuredClone(new P()); return [c.x, c.y, c instanceof P, Object.getPrototypeOf(c) === Object.prototype]; }],
  ['clone drops symbol keys', () => Object.getOwnPropertySymbols(structuredClone({ [Symbol('s')]: 1 })).length],
  ['clone non-enumerable dropped', () => { const o = {}; Object.defineProperty(o, 'h', { value: 1, enumerable: false }); return Object.keys(structuredClone(o)); }],
  ['clone getter value', () => structuredClone({ get g() { return 5; } })],
  ['clone sparse array', () => { const a = [1, , 3]; const c = structuredClone(a); return [c.length, 1 in c]; }],
  ['clone function throws', () => structuredClone(() => 1)],
  ['clone symbol throws', () => structuredClone(Symbol('x'))],
  ['clone nested function throws', () => structuredClone({ f() {} })],
  ['clone weakmap throws', () => structuredClone(new WeakMap())],
  ['clone promise throws', () => structuredClone(Promise.resolve())],
  ['clone error class', () => { try { structuredClone(() => 1); } catch (e) { return [e instanceof DOMException, e.name, e.code]; } }],
  ['clone no args', () => structuredClone()],
  ['clone blob', async () => { const b = structuredClone(new Blob(['ab'], { type: 'text/x' })); return [b instanceof Blob, b.type, await b.text()]; }],
  ['clone -0 and NaN', () => { const [a, b] = structuredClone([-0, NaN]); return [Object.is(a, -0), Number.isNaN(b)]; }],
  ['clone date invalid', () => Number.isNaN(structuredClone(new Date(NaN)).getTime())],

  // ---- crypto ----
  ['crypto getRandomValues returns same', () => { const a = new Uint8Array(8); return crypto.getRandomValues(a) === a; }],
  ['crypto getRandomValues types', () => [Int8Array, Uint8ClampedArray, Int16Array, Uint32Array, BigInt64Array].map((T) => crypto.getRandomValues(new T(2)).length)],
  ['crypto getRandomValues float', () => crypto.getRandomValues(new Float64Array(2))],
  ['crypto getRandomValues too big', () => crypto.getRandomValues(new Uint8Array(65537))],
  ['crypto getRandomValues max', () => crypto.getRandomValues(new Uint8Array(65536)).length],
  ['crypto getRandomValues fills', () => crypto.getRandomValues(new Uint8Array(64)).some((b) => b !== 0)],
  ['crypto getRandomValues subarray only', () => { const b = new Uint8Array(8); crypto.getRandomValues(b.subarray(4)); return b.slice(0, 4).every((x) => x === 0); }],
  ['crypto randomUUID shape', () => /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(crypto.randomUUID())],
  ['crypto randomUUID distinct', () => crypto.randomUUID() !== crypto.randomUUID()],
  ['subtle digest sha-256', async () => hex(await crypto.subtle.digest('SHA-256', enc('abc')))],
  ['subtle digest sha-1', async () => hex(await crypto.subtle.digest('SHA-1', enc('abc')))],
  ['subtle digest sha-384', async () => hex(await crypto.subtle.digest('SHA-384', enc('abc')))],
  ['subtle digest sha-512', async () => hex(await crypto.subtle.digest({ name: 'SHA-512' }, enc('abc')))],
  ['subtle digest lowercase name', async () => hex(await crypto.subtle.digest('sha-256', enc('')))],
  ['subtle digest empty', async () => hex(await crypto.subtle.digest('SHA-256', new ArrayBuffer(0)))],
  ['subtle digest dataview', async () => hex(await crypto.subtle.digest('SHA-1', new DataView(enc('xabc').buffer, 1)))],
  ['subtle digest md5', async () => crypto.subtle.digest('MD5', enc('a'))],
  ['subtle digest string data', async () => crypto.subtle.digest('SHA-256', 'abc')],
  ['subtle digest result type', async () => (await crypto.subtle.digest('SHA-256', enc('a'))) instanceof ArrayBuffer],
  ['subtle hmac sign', async () => { const k = await crypto.subtle.importKey('raw', enc('key'), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']); return hex(await crypto.subtle.sign('HMAC', k, enc('msg'))); }],
  ['subtle hmac sha-512 sign', async () => { const k = await crypto.subtle.importKey('raw', enc('key'), { name: 'HMAC', hash: { name: 'SHA-512' } }, false, ['sign']); return hex(await crypto.subtle.sign({ name: 'HMAC' }, k, enc('msg'))); }],
  ['subtle hmac verify', async () => { const k = await crypto.subtle.importKey('raw', enc('key'), { name: 'HMAC', hash: 'SHA-1' }, false, ['sign', 'verify']); const s = await crypto.subtle.sign('HMAC', k, enc('m')); const bad = new Uint8Array(s); bad[0] ^= 1; return [await crypto.subtle.verify('HMAC', k, s, enc('m')), await crypto.subtle.verify('HMAC', k, bad, enc('m'))]; }],
  ['subtle hmac key props', async () => { const k = await crypto.subtle.importKey('raw', enc('key'), { name: 'HMAC', hash: 'SHA-256' }, true, ['sign']); return [k.type, k.extractable, k.algorithm, k.usages, k instanceof CryptoKey]; }],
  ['subtle hmac export raw', async () => { const k = await crypto.subtle.importKey('raw', enc('key'), { name: 'HMAC', hash: 'SHA-256' }, true, ['sign']); return hex(await crypto.subtle.exportKey('raw', k)); }],
  ['subtle hmac export jwk', async () => { const k = await crypto.subtle.importKey('raw', enc('key'), { name: 'HMAC', hash: 'SHA-256' }, true, ['sign']); return crypto.subtle.exportKey('jwk', k); }],
  ['subtle hmac import jwk', async () => { const k = await crypto.subtle.importKey('jwk', { kty: 'oct', k: 'a2V5', alg: 'HS256', ext: true }, { name: 'HMAC', hash: 'SHA-256' }, true, ['sign']); return hex(await crypto.subtle.sign('HMAC', k, enc('msg'))); }],
  ['subtle hmac not extractable', async () => { const k = await crypto.subtle.importKey('raw', enc('key'), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']); return crypto.subtle.exportKey('raw', k); }],
  ['subtle hmac wrong usage', async () => { const k = await crypto.subtle.importKey('raw', enc('key'), { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']); return crypto.subtle.sign('HMAC', k, enc('m')); }],
  ['subtle hmac generateKey', async () => { const k = await crypto.subtle.generateKey({ name: 'HMAC', hash: 'SHA-256' }, true, ['sign']); return [k.algorithm, (await crypto.subtle.exportKey('raw', k)).byteLength]; }],
  ['subtle unsupported import', async () => crypto.subtle.importKey('raw', enc('k'), { name: 'FOO' }, false, ['sign'])],
  ['subtle rejects not throws', () => { try { const p = crypto.subtle.digest('NOPE', enc('')); p.catch(() => {}); return p instanceof Promise; } catch { return 'threw'; } }],
  ['crypto classes', () => [typeof Crypto, typeof SubtleCrypto, typeof CryptoKey, crypto instanceof Crypto, crypto.subtle instanceof SubtleCrypto]],
  ['crypto illegal constructor', () => new CryptoKey()],

  // ---- timers and microtasks ----
  ['timer order', async () => { const out = []; setTimeout(() => out.push('t2'), 2); setTimeout(() => out.push('t0'), 0); queueMicrotask(() => out.push('m')); Promise.resolve().then(() => out.push('p')); out.push('sync'); await new Promise((r) => setTimeout(r, 20)); return out; }],
  ['timer args', async () => new Promise((r) => setTimeout((a, b) => r([a, b]), 0, 'x', 2))],
  ['clearTimeout', async () => { let fired = false; const id = setTimeout(() => { fired = true; }, 0); clearTimeout(id); await new Promise((r) => setTimeout(r, 5)); return fired; }],
  ['setInterval count', async () => { let n = 0; await new Promise((r) => { const id = setInterval(() => { if (++n === 3) { clearInterval(id); r(); } }, 1); }); await tick(); return n; }],
  ['setInterval args', async () => new Promise((r) => { const id = setInterval((x) => { clearInterval(id); r(x); }, 1, 'arg'); })],
  ['clearInterval before first', async () => { let n = 0; const id = setInterval(() => n++, 1); clearInterval(id); await new Promise((r) => setTimeout(r, 5)); return n; }],
  ['setTimeout non-function', () => setTimeout('code', 0)],
  ['timer throw continues', async () => { setTimeout(() => { throw new Error('in timer'); }, 0); await new Promise((r) => setTimeout(r, 5)); return 'alive'; }],
  ['unhandled rejection continues', async () => { Promise.reject(new Error('unhandled in check')); await tick(); return 'alive'; }],
  ['queueMicrotask order', async () => { const out = []; queueMicrotask(() => out.push(1)); queueMicrotask(() => out.push(2)); await null; await null; return out; }],

  // ---- misc globals ----
  ['typeof globals', () => ['fetch', 'Request', 'Response', 'Headers', 'URL', 'URLSearchParams', 'TextEncoder', 'TextDecoder', 'Blob', 'File', 'FormData', 'AbortController', 'AbortSignal', 'ReadableStream', 'WritableStream', 'TransformStream', 'TextDecoderStream', 'TextEncoderStream', 'Event', 'EventTarget', 'CustomEvent', 'DOMException', 'atob', 'btoa', 'structuredClone', 'crypto', 'setTimeout', 'setInterval', 'clearTimeout', 'clearInterval', 'queueMicrotask', 'performance', 'console', 'reportError'].map((k) => `${k}:${typeof globalThis[k]}`)],
  ['performance.now monotonic', () => { const a = performance.now(); const b = performance.now(); return b >= a && typeof performance.timeOrigin === 'number'; }],
  ['Intl exists', () => typeof Intl],
  ['Intl NumberFormat', () => new Intl.NumberFormat('en-US').format(1234.5)],
  ['Intl DateTimeFormat', () => new Intl.DateTimeFormat('en-US', { timeZone: 'UTC' }).format(new Date(0))],
  ['toLocaleString number', () => (1234.5).toLocaleString('en-US')],
  ['localeCompare', () => ['b', 'a', 'C'].sort((x, y) => x.localeCompare(y))],
  ['String normalize', () => cps('e\u0301'.normalize('NFC'))],
  ['Error cause', () => new Error('m', { cause: 'c' }).cause],
  ['Array at/findLast/toSorted', () => [[1, 2, 3].at(-1), [1, 2, 3].findLast((x) => x < 3), [3, 1, 2].toSorted()]],
  ['Object.hasOwn', () => Object.hasOwn({ a: 1 }, 'a')],
  ['Object.groupBy', () => typeof Object.groupBy],
  ['regexp v flag', () => /[\p{L}--[a-z]]/v.test('A')],
  ['regexp d flag', () => /b/d.exec('ab').indices[0]],
  ['regexp unicode escape in class', () => new RegExp('[\\-]', 'u').test('-')],
  ['WeakRef/FinalizationRegistry', () => [typeof WeakRef, typeof FinalizationRegistry]],
  ['Array.fromAsync', async () => typeof Array.fromAsync === 'function' ? Array.fromAsync([1, Promise.resolve(2)]) : 'missing'],
  ['Promise.withResolvers', () => typeof Promise.withResolvers],
  ['String isWellFormed', () => ['a\ud800'.isWellFormed(), 'a\ud800'.toWellFormed().charCodeAt(1)]],
  ['JSON rawJSON', () => typeof JSON.rawJSON],
  ['Symbol.asyncIterator', () => typeof Symbol.asyncIterator],
  ['globalThis.self', () => typeof globalThis.self],
  ['navigator', () => typeof globalThis.navigator],
];

/** A value as comparable text: JSON with the cases JSON loses spelled out, plain objects' keys sorted, and a
 *  thrown error as its class. */
function show(v) {
  const seen = new Set();
  return JSON.stringify(v, function (k, x) {
    if (x === undefined) return '<undefined>';
    if (typeof x === 'bigint') return `<bigint ${x}>`;
    if (typeof x === 'number' && !Number.isFinite(x)) return `<number ${x}>`;
    if (typeof x === 'function') return `<function>`;
    if (typeof x === 'symbol') return `<symbol>`;
    if (x && typeof x === 'object') {
      if (seen.has(x) && !Array.isArray(x)) return '<seen>';
      seen.add(x);
      if (x instanceof ArrayBuffer) return `<ArrayBuffer ${x.byteLength}>`;
      if (ArrayBuffer.isView(x)) return `<${x.constructor.name} ${x.byteLength}>`;
      if (x instanceof Map || x instanceof Set) return `<${x.constructor.name} ${x.size}>`;
      // dictionaries compare by content, not by the order their keys were written in
      if (!Array.isArray(x) && Object.getPrototypeOf(x) === Object.prototype) return Object.fromEntries(Object.keys(x).sort().map((k) => [k, x[k]]));
    }
    return x;
  });
}

async function runChecks() {
  const out = [];
  for (const [name, fn] of CHECKS) {
    let r;
    try {
      r = { value: show(await fn()) };
    } catch (e) {
      r = { threw: e && typeof e === 'object' ? String(e.name) : typeof e };
    }
    out.push([name, r.value !== undefined ? r.value : `threw ${r.threw}`]);
  }
  return out;
}

await runChecks()
