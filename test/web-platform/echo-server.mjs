// The HTTP server test/web-platform/checks.js fetches from, on 127.0.0.1: /echo answers with what it was sent
// (method, path, headers but host, the body as latin1) so both sides can compare what left them; /redirect,
// /status/N, /form and /jar/* serve the redirect, status, formData and cookie checks. Every answer is fixed.
import { createServer } from 'node:http';

const routes = {
  '/echo': (req, res, body) => {
    const { host, ...headers } = req.headers;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ method: req.method, url: req.url, headers, body: body.toString('latin1') }));
  },
  '/redirect': (req, res) => {
    res.writeHead(Number(new URL(req.url, 'http://x').searchParams.get('status') ?? 302), { location: '/echo' });
    res.end();
  },
  '/form': (req, res) => {
    res.setHeader('content-type', 'application/x-www-form-urlencoded;charset=UTF-8');
    res.end('a=1&b=x+y&a=%C3%A9');
  },
  '/jar/set': (req, res) => {
    res.setHeader('set-cookie', 'wp=1; Path=/jar');
    res.end('set');
  },
};

/** Starts the server; resolves with its base URL and a function that stops it. */
export function startEchoServer() {
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const path = req.url.split('?')[0];
      const route = routes[path.startsWith('/jar/') && path !== '/jar/set' ? '/echo' : path];
      if (route) return route(req, res, Buffer.concat(chunks));
      const status = /^\/status\/(\d{3})$/.exec(path);
      res.writeHead(status ? Number(status[1]) : 404);
      res.end(status ? `status ${status[1]}` : 'no such route');
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({
    base: `http://127.0.0.1:${server.address().port}`,
    close: () => new Promise((done) => { server.closeAllConnections(); server.close(done); }),
  })));
}
