// Building several sources at once: each on a worker thread of a small pool (one per core, at most
// MAX_THREADS), so a server started on many uncached sources uses every core. One source is built on the
// calling thread: a worker's start (the bundler and the engine's instances) costs more than it saves.
//
// Each worker has its own Builder (the bundler, its compiler instance) on the engine modules the main thread
// compiled. A build that fails is that file's ExtensionLoadError, as in-process; a worker that dies (a crash
// in a library, running out of memory) fails only the build it was running, and the next build gets a new one.
import { availableParallelism } from 'node:os';
import { parentPort, Worker, workerData } from 'node:worker_threads';
import { Engine } from '../engine/engine.js';
import { ExtensionLoadError, KilnError } from '../errors.js';
import type { Built } from './artifact.js';

/** The most build threads a pool starts, whatever the core count. */
export const MAX_THREADS = 4;

type Job = { id: number; file: string };
type Reply = { id: number; built?: Omit<Built, 'bytes'> & { bytes: Uint8Array }; error?: { message: string; kiln: boolean } };

interface Lane {
  worker: Worker;
  job?: { job: Job; resolve(b: Built): void; reject(e: unknown): void };
}

export class BuildPool {
  private readonly lanes: Lane[] = [];
  private readonly queue: { job: Job; resolve(b: Built): void; reject(e: unknown): void }[] = [];
  private nextId = 1;
  private closed = false;

  constructor(private readonly engine: Engine, private readonly loadTimeoutMs: number | undefined, private readonly threads: number) {}

  /** Build `file` on a worker thread. */
  build(file: string): Promise<Built> {
    if (this.closed) return Promise.reject(new KilnError('the build pool is closed'));
    return new Promise((resolve, reject) => {
      this.queue.push({ job: { id: this.nextId++, file }, resolve, reject });
      this.dispatch();
    });
  }

  close(): void {
    this.closed = true;
    for (const lane of this.lanes) void lane.worker.terminate();
    this.lanes.length = 0;
  }

  private dispatch(): void {
    while (this.queue.length) {
      let lane = this.lanes.find((l) => !l.job);
      if (!lane && this.lanes.length < this.threads) lane = this.start();
      if (!lane) return;
      const next = this.queue.shift()!;
      lane.job = next;
      lane.worker.ref(); // a build in flight keeps the process alive (a promise alone does not)
      lane.worker.postMessage(next.job);
    }
  }

  private start(): Lane {
    const worker = new Worker(new URL(import.meta.url), {
      workerData: { kilnBuildWorker: true, engineDir: this.engine.dir, modules: this.engine.modules, backend: this.engine.backend, loadTimeoutMs: this.loadTimeoutMs },
    });
    const lane: Lane = { worker };
    worker.on('message', (r: Reply) => {
      const current = lane.job;
      if (!current || current.job.id !== r.id) return;
      lane.job = undefined;
      worker.unref();
      if (r.built) current.resolve(r.built);
      else if (r.error?.kiln) current.reject(Object.assign(new ExtensionLoadError(current.job.file, ''), { message: r.error.message }));
      else current.reject(new ExtensionLoadError(current.job.file, `could not be built: internal error (a bug in kiln: please report it): ${r.error?.message}`));
      this.dispatch();
    });
    const died = (why: string) => {
      const i = this.lanes.indexOf(lane);
      if (i < 0) return;
      this.lanes.splice(i, 1);
      lane.job?.reject(new ExtensionLoadError(lane.job.job.file, `could not be built: the build thread stopped (${why})`));
      lane.job = undefined;
      if (!this.closed) this.dispatch();
    };
    worker.on('error', (e) => died(e?.message ?? String(e)));
    worker.on('exit', (code) => died(`exit code ${code}`));
    worker.unref(); // idle; after the listeners, since a 'message' listener refs the port again
    this.lanes.push(lane);
    return lane;
  }
}

/**
 * Build each of `files`: on this thread when there is one, else on a pool of worker threads (one per core,
 * at most MAX_THREADS). Every file's outcome is its own promise; the pool closes when the last settles.
 */
export function buildAll(engine: Engine, files: string[], loadTimeoutMs?: number): Map<string, Promise<Built>> {
  const out = new Map<string, Promise<Built>>();
  if (files.length === 0) return out;
  const threads = Math.min(availableParallelism(), MAX_THREADS, files.length);
  if (threads <= 1) {
    const local = import('./artifact.js').then(({ Builder }) => new Builder(engine, loadTimeoutMs));
    let chain: Promise<unknown> = Promise.resolve();
    for (const f of files) {
      const p = chain.then(async () => (await local).build(f));
      chain = p.catch(() => {});
      out.set(f, p);
    }
    return out;
  }
  const pool = new BuildPool(engine, loadTimeoutMs, threads);
  for (const f of files) out.set(f, pool.build(f));
  void Promise.allSettled(out.values()).then(() => pool.close());
  return out;
}

// An async function, not a top-level await: the command line's bundle is CommonJS (scripts/bundle-cli.mjs).
if (parentPort && workerData?.kilnBuildWorker) void (async (port) => {
  const { Builder } = await import('./artifact.js');
  const engine = await Engine.load(workerData.engineDir, workerData.modules, workerData.backend);
  const builder = new Builder(engine, workerData.loadTimeoutMs);
  port.on('message', async (job: Job) => {
    try {
      const built = await builder.build(job.file);
      port.postMessage({ id: job.id, built } satisfies Reply, [built.bytes.buffer as ArrayBuffer]);
    } catch (e) {
      port.postMessage({ id: job.id, error: { message: e instanceof Error ? e.message : String(e), kiln: e instanceof KilnError } } satisfies Reply);
    }
  });
})(parentPort);
