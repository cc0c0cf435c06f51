// The nginx configuration of kiln's replicas, as docs/deployment.md shows it: the scale-out test runs exactly
// this. `replicas`: their names (KILN_REPLICA, which begins the MCP session ids and task ids each makes) and
// ports; `dir`: where nginx keeps its pid, its error log and its temporary files.
//  - 2026-07-28 requests carry no session id: round-robin over every replica (upstream kiln).
//  - A 2025 request's `Mcp-Session-Id`, and a 2026 tasks/* request's `Mcp-Name` (the task id), name a replica:
//    the request goes to that replica's upstream, whose other servers are its backups, so that when it is
//    gone another replica carries the MCP session on (the shared store has it).
//  - nginx (open source) has no active health checks: a replica that is gone is seen when a connection to it
//    is refused, and the request goes to the next server; one already sent is never sent twice. No server is
//    ever marked failed (max_fails=0): in a rolling restart a replica is back before nginx's fail_timeout
//    would have passed, and the next one goes down.
//  - Clients' connections are not kept alive (keepalive_timeout 0): a reload closes the idle ones, racing the
//    request a client is sending on one, which no client library sends again.
//  - Host is passed through (kiln checks it: [http] allowedHosts lists the balancer's), responses unbuffered
//    (they are event streams).
//  - A replica to be stopped is first taken out (`down`: a replica `{ down: true }`) and nginx reloaded: nginx
//    cannot be told that a replica drains, and a stopping replica's listener, once closed, resets the
//    connections still queued on it — requests nginx has already sent.
const server = (r, backup = '') => `server 127.0.0.1:${r.port} max_fails=0${backup}${r.down ? ' down' : ''};`;

export const nginxConfig = (lb, replicas, dir) => `${process.getuid?.() === 0 ? 'user root;\n' : ''}worker_processes 1;
worker_shutdown_timeout 10s;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/nginx-error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  keepalive_timeout 0;
  client_body_temp_path ${dir}/nginx-body;
  proxy_temp_path ${dir}/nginx-proxy;
  fastcgi_temp_path ${dir}/nginx-fastcgi;
  uwsgi_temp_path ${dir}/nginx-uwsgi;
  scgi_temp_path ${dir}/nginx-scgi;
  upstream kiln {
${replicas.map((r) => `    ${server(r)}`).join('\n')}
  }
${replicas.map((r) => `  upstream kiln_${r.name} {
    ${server(r)}
${replicas.filter((o) => o.name !== r.name).map((o) => `    ${server(o, ' backup')}`).join('\n')}
  }`).join('\n')}
  map $http_mcp_session_id $kiln_session {
    default "";
${replicas.map(({ name }) => `    ~^${name}\\. kiln_${name};`).join('\n')}
  }
  map "$http_mcp_method $http_mcp_name" $kiln_task {
    default kiln;
${replicas.map(({ name }) => `    "~^tasks/\\S+ ${name}\\." kiln_${name};`).join('\n')}
  }
  map $kiln_session $kiln_backend {
    "" $kiln_task;
    default $kiln_session;
  }
  server {
    listen 127.0.0.1:${lb};
    location / {
      proxy_pass http://$kiln_backend;
      proxy_http_version 1.1;
      proxy_set_header Host $http_host;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_read_timeout 120s;
      proxy_next_upstream error timeout;
    }
  }
}
`;
