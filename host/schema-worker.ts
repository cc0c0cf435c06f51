// Slow argument validation, off the main thread and under a deadline (see schema.ts). One worker thread
// holds the compiled schemas (one Ajv per owner, as on the main thread); a validation that passes the deadline
// terminates it — the only way to stop a regular expression mid-match — and the next one starts a new worker.
import { parentPort, Worker, workerData } from 'node:worker_threads';
import type { Ajv } from 'ajv';

/** How long one slow validation may take. */
export const VALIDATION_LIMIT_MS = 1000;

type Request = { id: number; key: string; schema: unknown; args: unknown };
type Reply = { id: number; error?: string; failure?: string; args?: unknown };

export class SlowValidation {
  private current?: { worker: Worker; pending: Map<number, (r: Reply) => void> };
  private nextId = 1;

  constructor(private readonly limitMs = VALIDATION_LIMIT_MS) {}

  /** The live worker and the replies it owes (each worker has its own: a stopped one fails only its own). */
  private start(): { worker: Worker; pending: Map<number, (r: Reply) => void> } {
    if (this.current) return this.current;
    const worker = new Worker(new URL(import.meta.url), { workerData: { kilnSchemaWorker: true } });
    worker.unref();
    const pending = new Map<number, (r: Reply) => void>();
    const me = { worker, pending };
    worker.on('message', (r: Reply) => {
      const done = pending.get(r.id);
      pending.delete(r.id);
      done?.(r);
    });
    const fail = () => {
      if (this.current === me) this.current = undefined;
      for (const [id, done] of pending) done({ id, failure: 'the validation thread stopped' });
      pending.clear();
    };
    worker.on('error', fail);
    worker.on('exit', fail);
    this.current = me;
    return me;
  }

  /** Validate `args` against `schema` (compiled once per `key`); `error` says why they do not match. */
  validate(key: string, schema: unknown, args: unknown): Promise<{ error?: string; timedOut?: boolean; limitMs: number; args?: unknown }> {
    const me = this.start();
    const id = this.nextId++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        // The only way to stop a regular expression mid-match: end the thread. Validations in flight on it are
        // refused too; the next one starts a new thread.
        if (this.current === me) this.current = undefined;
        void me.worker.terminate();
      }, this.limitMs);
      me.pending.set(id, (r) => {
        clearTimeout(timer);
        resolve(r.failure ? { timedOut: true, limitMs: this.limitMs } : { error: r.error, limitMs: this.limitMs, args: r.args });
      });
      me.worker.postMessage({ id, key, schema, args } satisfies Request);
    });
  }

  close(): void {
    void this.current?.worker.terminate();
    this.current = undefined;
  }
}

if (parentPort && workerData?.kilnSchemaWorker) {
  const port = parentPort;
  // Not awaited here: schema-ajv.js (bundled with schema.ts, which imports this module) must find this module
  // evaluated, or the two would wait for each other forever (a top-level await in an import cycle).
  const helpers = import('./schema-ajv.js');
  const compiled = new Map<string, (args: unknown) => string | undefined>();
  const ajvs = new Map<string, Promise<Ajv>>();
  port.on('message', async (m: Request) => {
    try {
      const error = (await checker(m))(m.args); // fills in the schema's defaults, which go back with the reply
      port.postMessage({ id: m.id, error, args: m.args } satisfies Reply);
    } catch (e) {
      port.postMessage({ id: m.id, error: `the inputSchema could not be used: ${(e as Error)?.message ?? e}` } satisfies Reply);
    }
  });
  async function checker(m: Request): Promise<(args: unknown) => string | undefined> {
    let check = compiled.get(m.key);
    if (!check) {
      const owner = m.key.slice(0, m.key.indexOf('\0'));
      const { draftOf, makeAjv } = await helpers;
      const draft = draftOf(m.key.slice(m.key.indexOf('\0') + 1), m.schema as Record<string, unknown>);
      let made = ajvs.get(`${owner}\0${draft}`);
      if (!made) ajvs.set(`${owner}\0${draft}`, (made = makeAjv(draft)));
      const ajv = await made;
      const v = ajv.compile(m.schema as object);
      check = (args) => (v(args) ? undefined : ajv.errorsText(v.errors, { dataVar: 'args' }));
      compiled.set(m.key, check);
    }
    return check;
  }
}
