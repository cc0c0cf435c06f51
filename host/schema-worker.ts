// Slow argument validation, off the main thread and under a deadline (see schema.ts). One worker thread
// holds the compiled schemas (one Ajv per owner, as on the main thread); a validation that passes the deadline
// terminates it — the only way to stop a regular expression mid-match — and the next one starts a new worker.
import { parentPort, Worker, workerData } from 'node:worker_threads';

/** How long one slow validation may take. */
export const VALIDATION_LIMIT_MS = 1000;

type Request = { id: number; key: string; schema: unknown; args: unknown };
type Reply = { id: number; error?: string; failure?: string };

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
  validate(key: string, schema: unknown, args: unknown): Promise<{ error?: string; timedOut?: boolean; limitMs: number }> {
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
        resolve(r.failure ? { timedOut: true, limitMs: this.limitMs } : { error: r.error, limitMs: this.limitMs });
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
  const { Ajv } = await import('ajv');
  const compiled = new Map<string, (args: unknown) => string | undefined>();
  const ajvs = new Map<string, InstanceType<typeof Ajv>>();
  port.on('message', (m: Request) => {
    try {
      port.postMessage({ id: m.id, error: checker(m)(m.args) } satisfies Reply);
    } catch (e) {
      port.postMessage({ id: m.id, error: `the inputSchema could not be used: ${(e as Error)?.message ?? e}` } satisfies Reply);
    }
  });
  function checker(m: Request): (args: unknown) => string | undefined {
    let check = compiled.get(m.key);
    if (!check) {
      const owner = m.key.slice(0, m.key.indexOf('\0'));
      let ajv = ajvs.get(owner);
      if (!ajv) ajvs.set(owner, (ajv = new Ajv({ strict: false, allErrors: true })));
      const v = ajv.compile(m.schema as object);
      check = (args) => (v(args) ? undefined : ajv!.errorsText(v.errors, { dataVar: 'args' }));
      compiled.set(m.key, check);
    }
    return check;
  }
}
