// The bounds of a call's pages: a page runs only while a call drives it, and within that call's limits. One
// PageBounds per session context (context.ts), reaching every page, popup, out-of-process frame and dedicated
// worker of the context through CDP.
//
// Invariants:
//  - A page runs only while a call drives it: when the guest is idle, every page of the context (popups and
//    frames of other sites, which run in renderer processes of their own, included) has a running script
//    terminated and is then paused in its debugger (CDP Runtime.terminateExecution, Debugger.pause: the next
//    script to start, a timer's or an event's, stops the renderer's main thread there, and nothing of the page
//    runs until resume), and its dedicated workers are paused in their debugger too (workers.ts), before the
//    call is answered (Session.pagesStopped); the next call's first browser op resumes them all. Pages that
//    do not stop within FREEZE_MS are closed.
//  - A page is bounded like its guest (PageLimits): after each browser op, and every WATCH_MS while one is
//    in flight, the context's JavaScript memory (pages, frames, workers: V8 heap, DOM heap, ArrayBuffer
//    storage) is checked against the guest's memory limit, and its pages' main-thread CPU time since the
//    call began against the call's CPU budget. Over either, the pages' scripts stop, the op fails with a
//    MemoryLimitError or CpuLimitError naming the setting, the rest of the call gets no page (memory: the
//    pages are closed). Once spent, a call's bounds answer that same error to every later check.
//  - Freezing never fails: a page it cannot reach (closed, crashed) runs nothing.
import type { BrowserContext, CDPSession, Frame, Page } from 'playwright-core';
import { CpuLimitError, type KilnError, MemoryLimitError } from '../../errors.js';
import { WorkerTargets } from './workers.js';

/** How long a page has to stop its scripts when its call ends before it is closed instead. */
const FREEZE_MS = 5000;
/** How often the limits are checked while a browser op is in flight. */
const WATCH_MS = 250;

/** The bounds of a call's pages: the guest's memory limit and the call's CPU budget (policy/limits.ts), each with
 *  the setting it comes from, for the refusal. */
export interface PageLimits {
  memory: { bytes: number; setting: string };
  cpu?: { ms: number; setting: string };
}

/** One call's standing against its limits: the limits, its pages' CPU time when it began, and the limit error
 *  that ended its use of the pages (then every later op of the call gets it). */
export interface CallBounds {
  limits?: PageLimits;
  cpuAtStart: number;
  spent?: KilnError;
}

/** What the bounds need of the context they watch: the context as it is now (none once it is gone), and how
 *  to forget its pages once they were closed here. */
export interface BoundedContext {
  current(): Promise<BrowserContext | undefined>;
  dropPages(): void;
}

export class PageBounds {
  /** The pages' scripts were stopped when the last call ended; the next call waits for that, then resumes. */
  private frozen: Promise<void> | undefined;
  private readonly cdps = new WeakMap<Page | Frame, Promise<CDPSession>>();
  private readonly workers = new WeakMap<CDPSession, WorkerTargets>();
  /** Sessions paused since the last resume: stopped already (terminating a paused script would wait for it). */
  private readonly paused = new WeakSet<CDPSession>();

  constructor(private readonly context: BoundedContext) {}

  /** The guest went idle: the pages' scripts stop, after any earlier stop. */
  stopLater(): void {
    const previous = this.frozen;
    this.frozen = (async () => {
      await previous;
      await this.freeze();
    })().catch(() => {}); // freeze never fails: a page it cannot reach runs nothing
  }

  /** Resolves when the last stop is done; undefined when the pages were never stopped (or the context went). */
  whenStopped(): Promise<void> | undefined {
    return this.frozen?.catch(() => {});
  }

  /** The context went away: nothing is left to stop. */
  forget(): void {
    this.frozen = undefined;
  }

  private async cdp(target: Page | Frame, context: BrowserContext): Promise<CDPSession | undefined> {
    let c = this.cdps.get(target);
    if (!c) {
      c = context.newCDPSession(target).then(async (s) => {
        await s.send('Performance.enable');
        // The debugger stops the page between calls (freeze); during a call it lets every pause pass, so a
        // page's own `debugger` statement does nothing, as without DevTools. Enabled once: enabling it again
        // for every stop costs the page's scripts their compiled code.
        await s.send('Debugger.enable');
        await s.send('Debugger.setSkipAllPauses', { skip: true });
        this.workers.set(s, new WorkerTargets(s));
        // Its dedicated workers attach to this session (not flattened: they are reached through it).
        await s.send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: false, flatten: false });
        return s;
      });
      // A frame's refusal is not kept: the frame may move to a process of its own later.
      c.catch(() => this.cdps.delete(target));
      this.cdps.set(target, c);
    }
    return c.catch(() => undefined);
  }

  /** The sessions of everything in the context that runs scripts on its own thread of a renderer: every
   *  page (popups too) and every out-of-process frame in them. */
  private async scripted(context: BrowserContext): Promise<CDPSession[]> {
    const all = context.pages().flatMap((page) => [page as Page | Frame, ...page.frames().filter((f) => f !== page.mainFrame())]);
    return (await Promise.all(all.map((x) => this.cdp(x, context)))).filter((s): s is CDPSession => s !== undefined);
  }

  /** Every page of the context (popups and out-of-process frames too): scripts disabled, a running one
   *  terminated; pages that do not answer within FREEZE_MS are closed. */
  private async freeze(): Promise<void> {
    const context = await this.context.current();
    if (!context) return;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), FREEZE_MS)));
    const done = (async () => {
      await Promise.all((await this.scripted(context)).map(async (s) => {
        if (this.paused.has(s)) return;
        try {
          // Terminating ends a script running now (a busy loop); the pause then stops the main thread at the
          // next script that starts, so nothing runs until resume. Disabling scripts instead would not do: a
          // timer still fires with scripts disabled (only its callback is refused), and a few hundred 1 ms
          // intervals keep a core busy that way. Its workers are paused in their debugger (a busy loop too).
          await Promise.all([
            s.send('Debugger.setSkipAllPauses', { skip: false }), s.send('Runtime.terminateExecution'), this.workers.get(s)?.pause(),
          ]);
          await s.send('Debugger.pause');
          this.paused.add(s);
        } catch {
          // a page closed or crashed meanwhile: nothing runs in it
        }
      }));
    })();
    try {
      if ((await Promise.race([done, late])) === 'late') {
        await Promise.all(context.pages().map((p) => p.close({ runBeforeUnload: false }).catch(() => {})));
        this.context.dropPages();
      }
    } finally {
      clearTimeout(timer);
    }
  }

  /** The pages may run again (the start of a call that uses them). */
  async resume(context: BrowserContext): Promise<void> {
    await this.frozen;
    // Skipping pauses first: a pause still pending (nothing ran since it was asked, so resuming answers an
    // error) is let pass too.
    await Promise.all((await this.scripted(context)).map((s) => Promise.all([
      this.paused.delete(s),
      s.send('Debugger.setSkipAllPauses', { skip: true }).catch(() => {}), s.send('Debugger.resume').catch(() => {}),
      this.workers.get(s)?.resume(),
    ])));
  }

  /** The context's JavaScript memory (V8 heap, DOM heap, ArrayBuffer storage) and main-thread CPU ms. */
  async usage(context: BrowserContext): Promise<{ bytes: number; cpuMs: number }> {
    let bytes = 0;
    let cpuMs = 0;
    await Promise.all((await this.scripted(context)).map(async (s) => {
      try {
        const heap = await s.send('Runtime.getHeapUsage') as { usedSize: number; embedderHeapUsedSize?: number; backingStorageSize?: number };
        bytes += heap.usedSize + (heap.embedderHeapUsedSize ?? 0) + (heap.backingStorageSize ?? 0);
        const { metrics } = await s.send('Performance.getMetrics');
        cpuMs += (metrics.find((m) => m.name === 'TaskDuration')?.value ?? 0) * 1000;
        for (const w of await this.workers.get(s)?.send('Runtime.getHeapUsage') ?? []) {
          const h = w as { usedSize?: number; backingStorageSize?: number } | undefined;
          bytes += (h?.usedSize ?? 0) + (h?.backingStorageSize ?? 0);
        }
      } catch {
        // closed or crashed meanwhile
      }
    }));
    return { bytes, cpuMs };
  }

  /** The call's pages against its limits: undefined while within them; else the error, after the pages'
   *  scripts were stopped (and, over memory, the pages closed so their memory goes). */
  async overLimit(tool: string, call: CallBounds, context: BrowserContext): Promise<KilnError | undefined> {
    if (call.spent) return call.spent;
    const limits = call.limits;
    if (!limits) return undefined;
    const { bytes, cpuMs } = await this.usage(context);
    if (call.spent) return call.spent;
    const mib = (n: number) => `${(n / 1048576).toFixed(1)} MiB`;
    if (bytes > limits.memory.bytes) {
      call.spent = new MemoryLimitError(`tool "${tool}"'s pages hold ${mib(bytes)} of JavaScript memory, more than its ${mib(limits.memory.bytes)} memory limit (${limits.memory.setting}); its pages were closed`);
      await this.freeze();
      await Promise.all(context.pages().map((p) => p.close({ runBeforeUnload: false }).catch(() => {})));
      this.context.dropPages();
    } else if (limits.cpu && cpuMs - call.cpuAtStart > limits.cpu.ms) {
      call.spent = new CpuLimitError(`tool "${tool}"'s pages used ${Math.round(cpuMs - call.cpuAtStart)} ms of CPU time, more than its ${limits.cpu.ms} ms (${limits.cpu.setting}); its pages' scripts were stopped`);
      await this.freeze();
    }
    return call.spent;
  }

  /** While one op is in flight, its pages checked against the call's limits every WATCH_MS: `over` rejects
   *  with the limit error; `stop` ends the watch (when the op is answered). Without limits, nothing is watched. */
  watch(tool: string, call: CallBounds, context: BrowserContext): { over: Promise<never>; stop: () => void } {
    let watching = true;
    let watchTimer: NodeJS.Timeout | undefined;
    const over = new Promise<never>((_, reject) => {
      const tick = () => {
        watchTimer = setTimeout(() => void this.overLimit(tool, call, context).then((e) => {
          if (e) reject(e);
          else if (watching) tick();
        }, () => {}), WATCH_MS);
      };
      if (call.limits) tick();
    });
    over.catch(() => {});
    return {
      over,
      stop: () => {
        watching = false;
        clearTimeout(watchTimer);
      },
    };
  }
}
