// What an operator monitors: Prometheus metrics (prom-client, its own registry, never the global one) of one
// `kiln mcp --http`, served at /metrics (mcp/http.ts decides who may read them). Counted from the audit
// records every call and decision makes (policy/audit-log.ts observers) and the calls the MCP side answers.
//
// Invariants:
//  - No label holds a client's value: tools are labelled by loaded tool name ("other" for a name nothing
//    serves), errors by their class name, refusals by the operation's kind; sessions and principals are counts.
//  - Reading the metrics changes nothing; gauges are read from the host when scraped.
import type { Counter, Gauge, Histogram, Registry as PromRegistry } from 'prom-client';
import type { AuditRecord } from '../policy/audit-log.js';
import type { McpHost } from './host.js';

export interface Metrics {
  /** One answered tools/call: its tool (as loaded), outcome and duration. */
  call(tool: string, outcome: string, seconds: number, error?: string): void;
  /** The text /metrics answers, and its content type. */
  scrape(): Promise<{ body: string; contentType: string }>;
}

/** Metrics of `host`'s server (prom-client is loaded only for a server over HTTP). */
export async function startMetrics(host: McpHost): Promise<Metrics> {
  const prom = await import('prom-client');
  const register: PromRegistry = new prom.Registry();
  prom.collectDefaultMetrics({ register, prefix: 'kiln_' }); // kiln_process_*, kiln_nodejs_*
  const calls: Counter<'tool' | 'outcome'> = new prom.Counter({ name: 'kiln_calls_total', help: 'tools/call requests answered, by tool and outcome', labelNames: ['tool', 'outcome'], registers: [register] });
  const errors: Counter<'kind'> = new prom.Counter({ name: 'kiln_call_errors_total', help: 'calls that ended in an error, by its kind', labelNames: ['kind'], registers: [register] });
  const latency: Histogram<'tool'> = new prom.Histogram({
    name: 'kiln_call_duration_seconds', help: 'time to answer a tools/call request', labelNames: ['tool'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60], registers: [register],
  });
  const refusals: Counter<'capability'> = new prom.Counter({ name: 'kiln_refusals_total', help: 'capability decisions refused, by the operation refused (http.fetch, commands.run, fs.read, ...)', labelNames: ['capability'], registers: [register] });
  const approvals: Counter<'event' | 'answer'> = new prom.Counter({ name: 'kiln_approvals_total', help: 'approval questions asked and answered', labelNames: ['event', 'answer'], registers: [register] });
  const gauge = (name: string, help: string, read: () => number): Gauge => new prom.Gauge({ name, help, registers: [register], collect() { this.set(read()); } });
  gauge('kiln_sessions', 'kiln sessions held', () => host.sessions.size);
  gauge('kiln_guests', 'live guest instances', () => host.sessions.liveGuests());
  gauge('kiln_guest_memory_bytes', 'guest memory reserved (heap limits and overhead of live guests)', () => host.sessions.reservedBytes());
  if (host.sessions.store) gauge('kiln_store_up', 'whether the shared session store ([sessions] store) answers: 1 or 0', () => (host.sessions.store!.ready ? 1 : 0));

  const known = (tool: string) => (host.registry.tools.has(tool) || ['kiln_extensions', 'kiln_close_session', 'run_script'].includes(tool) ? tool : 'other');
  host.registry.observe((r: AuditRecord) => {
    if (r.type === 'decision' && r.verdict === 'deny') refusals.inc({ capability: r.op });
    else if (r.type === 'approval' && (r.event === 'asked' || r.event === 'answered' || r.event === 'unasked' || r.event === 'state-refused')) {
      approvals.inc({ event: r.event, answer: r.event === 'answered' ? String(r.answer) : r.event === 'state-refused' ? String(r.reason) : '' });
    }
  });
  return {
    call(tool, outcome, seconds, error) {
      const t = known(tool);
      calls.inc({ tool: t, outcome });
      latency.observe({ tool: t }, seconds);
      if (error) errors.inc({ kind: /^[A-Za-z]{1,64}$/.test(error) ? error : 'Error' });
    },
    async scrape() {
      return { body: await register.metrics(), contentType: register.contentType };
    },
  };
}
