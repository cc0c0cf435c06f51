// A real HTTP server on 127.0.0.1 for the net tests. It records every request it sees, so a test can
// prove that a refused request never reached it.
import http from 'node:http';
import zlib from 'node:zlib';

export async function startServer(t) {
  const hits = [];
  const closed = []; // urls whose client went away mid-response
  const waiting = new Map(); // /barrier key -> responses held until `n` requests with that key have arrived
  const seen = []; // /seen requests held until a request for their ?path= arrives: { path, res }
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    hits.push({ method: req.method, path: url.pathname, headers: req.headers });
    for (const w of seen.filter((w) => w.path === url.pathname)) {
      seen.splice(seen.indexOf(w), 1);
      w.res.end('seen');
    }
    const chunks = [];
    req.on('data', (d) => chunks.push(d));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      switch (url.pathname) {
        case '/hello':
          res.writeHead(200, { 'content-type': 'application/json', 'x-multi': 'one', 'set-cookie': ['a=1; Path=/', 'b=2; Path=/'] });
          return res.end(JSON.stringify({ hello: 'world' }));
        case '/bytes-headers':
          // Header values as raw bytes: latin1 "café", and a UTF-8 file name as many servers send one (Node
          // writes a header string one byte per character).
          res.writeHead(200, { 'x-latin': 'caf\u00e9', 'content-disposition': Buffer.from('attachment; filename="café €.txt"').toString('latin1') });
          return res.end('ok');
        case '/redirect':
          res.writeHead(302, { location: url.searchParams.get('to') });
          return res.end();
        case '/slow':
          return setTimeout(() => res.end('slow'), Number(url.searchParams.get('ms') ?? 400));
        case '/big': {
          const total = Number(url.searchParams.get('mb')) * 1024 * 1024;
          const block = Buffer.alloc(64 * 1024, 120);
          let sent = 0;
          res.writeHead(200, { 'content-type': 'application/octet-stream' });
          const pump = () => {
            while (sent < total) {
              const n = Math.min(block.length, total - sent);
              sent += n;
              if (!res.write(block.subarray(0, n))) return res.once('drain', pump);
            }
            res.end();
          };
          return pump();
        }
        case '/endless': {
          res.writeHead(200, { 'content-type': 'application/octet-stream' });
          res.write(Buffer.alloc(1024, 97));
          const timer = setInterval(() => res.write(Buffer.alloc(1024, 98)), 20);
          res.on('close', () => { clearInterval(timer); closed.push(url.pathname); });
          return;
        }
        case '/echo':
          res.writeHead(200, { 'content-type': 'application/json' });
          return res.end(JSON.stringify({ method: req.method, query: url.search, headers: req.headers, body: body.toString('latin1') }));
        case '/login':
          res.writeHead(200, { 'set-cookie': 'sid=s3cret; Path=/; HttpOnly' });
          return res.end('ok');
        case '/me':
          return res.end(req.headers.cookie ?? '(no cookie)');
        case '/hang': // never answered; `closed` records when the client gives up
          res.on('close', () => closed.push(url.pathname));
          return;
        case '/seen': { // ?path=P: answered once a request for P has arrived (at once if one has)
          const path = url.searchParams.get('path');
          if (hits.some((h) => h.path === path)) return res.end('seen');
          seen.push({ path, res });
          return;
        }
        case '/barrier': { // ?key=K&n=N: no response until N requests for K have arrived (proves they overlap)
          const key = url.searchParams.get('key');
          const held = [...(waiting.get(key) ?? []), res];
          waiting.set(key, held);
          if (held.length < Number(url.searchParams.get('n'))) return;
          waiting.delete(key);
          for (const r of held) r.end('met');
          return;
        }
        case '/compressed': { // ?enc=gzip|deflate|br|gzip,br: the text compressed in those encodings, in order
          const encodings = (url.searchParams.get('enc') ?? 'gzip').split(',');
          let data = Buffer.from('compressed héllo '.repeat(200));
          const codec = { gzip: zlib.gzipSync, deflate: zlib.deflateSync, br: zlib.brotliCompressSync };
          for (const e of encodings) data = codec[e](data);
          res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'content-encoding': encodings.join(', ') });
          return res.end(data);
        }
        case '/bomb': { // ?mb=N: N MiB of zeros, gzipped to a few KiB
          const data = zlib.gzipSync(Buffer.alloc(Number(url.searchParams.get('mb')) * 1024 * 1024), { level: 9 });
          res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-encoding': 'gzip' });
          return res.end(data);
        }
        case '/codings': { // ?n=N: a text gzipped N times, the header listing N codings
          let data = Buffer.from('layered');
          const n = Number(url.searchParams.get('n'));
          for (let i = 0; i < n; i++) data = zlib.gzipSync(data);
          // ?lines=1: one Content-Encoding line per coding
          res.writeHead(200, { 'content-encoding': url.searchParams.get('lines') ? Array(n).fill('gzip') : Array(n).fill('gzip').join(',') });
          return res.end(data);
        }
        case '/cookies': { // ?n=N&r=R: N cookies named cR_0 ... cR_{N-1}
          const r = url.searchParams.get('r');
          const big = url.searchParams.get('big') ? [`big${r}=${'x'.repeat(5000)}; Path=/`] : []; // ?big=1: and one of 5,000 bytes
          res.writeHead(200, { 'set-cookie': [...big, ...Array.from({ length: Number(url.searchParams.get('n')) }, (_, i) => `c${r}_${i}=1; Path=/`)] });
          return res.end('ok');
        }
        case '/page': // ?html=...: that HTML, as a page (a browser test's frame with a script of its own)
          res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
          return res.end(url.searchParams.get('html') ?? '');
        case '/status': // ?code=N: that status, with a body where HTTP allows one
          res.writeHead(Number(url.searchParams.get('code')));
          return res.end('a body');
        default:
          res.writeHead(404);
          return res.end('not found');
      }
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  t?.after(() => { server.closeAllConnections?.(); server.close(); });
  const port = server.address().port;
  return { port, base: `http://127.0.0.1:${port}`, hits, closed, count: (path) => hits.filter((h) => h.path === path).length };
}
