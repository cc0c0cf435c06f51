// The HAProxy configuration of kiln's replicas, as docs/deployment.md shows it: the scale-out test and
// bench/scale-out.mjs run exactly this. `replicas`: their names (KILN_REPLICA, which begins the MCP session ids
// each makes) and ports.
//  - 2026-07-28 requests carry no session id: round-robin.
//  - A 2025 request's `Mcp-Session-Id` names its replica: it goes there, from the first request after
//    `initialize` on (the id itself routes; HAProxy keeps no table of sessions).
//  - A 2026 tasks/* request's `Mcp-Name` is the task id, which names its replica the same way.
//  - /readyz is the health check: a draining replica gets no new requests.
export const haproxyConfig = (lb, replicas) => `global
  maxconn 2000
defaults
  mode http
  timeout connect 2s
  timeout client 120s
  timeout server 120s
  timeout check 5s
  option redispatch
  retries 3
frontend mcp
  bind 127.0.0.1:${lb}
  default_backend kiln
backend kiln
  balance roundrobin
  option httpchk GET /readyz
  http-check expect status 200
${replicas.map(({ name }) => `  use-server ${name} if { req.hdr(mcp-session-id) -m beg ${name}. }`).join('\n')}
${replicas.map(({ name }) => `  use-server ${name} if { req.hdr(mcp-method) -m beg tasks/ } { req.hdr(mcp-name) -m beg ${name}. }`).join('\n')}
${replicas.map(({ name, port }) => `  server ${name} 127.0.0.1:${port} check inter 500 fall 2 rise 2`).join('\n')}
`;
