// `kiln bdd`: runs pickles (scenarios, one per Examples row) against the step definitions of the bdd image, in
// N guests (--parallel), and tells what happened as Cucumber Messages (the formats in formats.ts read them).
//
// One guest per worker; scenarios go to whichever worker is free, serially within one; a scenario's messages
// are held until it ends, so output stays ordered per scenario. Every step and hook is one call of the internal
// tool of the file it comes from (image.ts), under its timeout: a step that spins is stopped by the engine's
// deadline, its guest discarded, and the worker's next scenario gets a fresh guest (BeforeAll hooks run again
// there). Matching happens in the guest (the author's regular expressions never run on the host).
import { IdGenerator, TimeConversion, type Envelope, type Pickle, type PickleStep, type TestStep, type TestStepResult, TestStepResultStatus } from '@cucumber/messages';
import { KilnError, ToolError } from '../errors.js';
import type { Registry } from '../extensions/registry.js';
import type { Sessions } from '../sessions/sessions.js';
import { runInSession } from '../sessions/call.js';
import { BDD_TOOL_PREFIX } from './image.js';
import type { LoadedExtension } from '../extensions/loaded.js';
import type { StackMapper } from '../untrusted/source-map.js';
import { kilnVersion } from '../version.js';

const S = TestStepResultStatus;

export interface RunOptions {
  parallel: number;
  dryRun: boolean;
  failFast: boolean;
  retry: number;
  /** --retry-tag-filter: only scenarios whose tags match are retried. */
  retryTags?: (tags: string[]) => boolean;
  strict: boolean;
  worldParameters: unknown;
}

interface Setup {
  steps: { id: string; source: string; type: 'CUCUMBER_EXPRESSION' | 'REGULAR_EXPRESSION'; file: number; stack: string; timeout: number }[];
  hooks: { id: string; kind: string; tags?: string; name?: string; file: number; stack: string; timeout: number }[];
  parameterTypes: { id: string; name: string; regexps: string[]; preferForRegularExpressionMatch: boolean; useForSnippets: boolean; stack: string }[];
}

interface StepOutcome {
  status: 'PASSED' | 'FAILED' | 'PENDING' | 'SKIPPED';
  error?: { message: string; stack: string };
  attachments: { body: string; mediaType: string; contentEncoding: 'IDENTITY' | 'BASE64'; fileName?: string }[];
  durationMs: number;
}

/** A planned step of a test case: a hook, or a pickle step with its matches (or why matching failed). */
type Planned =
  | { kind: 'hook'; testStep: TestStep; hookId: string }
  | { kind: 'step'; testStep: TestStep; pickleStep: PickleStep; matches: string[]; matchError?: string };

/** What matching says of one step. */
interface Matched {
  ids: string[];
  args?: any[][];
  snippet?: string;
  error?: string;
}

const now = () => TimeConversion.millisecondsSinceEpochToTimestamp(Date.now());
const duration = (ms: number) => TimeConversion.millisecondsToDuration(Math.max(0, ms));
const RANK: Record<string, number> = { UNKNOWN: 0, PASSED: 1, SKIPPED: 2, PENDING: 3, UNDEFINED: 4, AMBIGUOUS: 5, FAILED: 6 };

export class BddRun {
  private readonly newId = IdGenerator.incrementing();
  private setup!: Setup;
  private mapper?: StackMapper;
  private readonly hookById = new Map<string, Setup['hooks'][number]>();
  private readonly stepById = new Map<string, Setup['steps'][number]>();
  /** Workers whose guest must run BeforeAll hooks before their next scenario. */
  private readonly fresh = new Set<number>();
  private stopping = false;
  failed = 0;

  constructor(
    private readonly registry: Registry,
    private readonly sessions: Sessions,
    private readonly image: LoadedExtension,
    private readonly emit: (e: Envelope) => void,
    private readonly options: RunOptions,
  ) {}

  private readonly NONE = () => `${BDD_TOOL_PREFIX}${(this.image as LoadedExtension & { files: unknown[] }).files.length}`;

  /** One internal call on `worker`'s guest: op `args.op` as tool `tool`, under `timeoutMs`. */
  private async call(worker: number, tool: string, args: Record<string, unknown>, timeoutMs?: number): Promise<any> {
    return this.sessions.run(`bdd-${worker}`, this.image.file, (session) =>
      runInSession(this.registry, session, this.image, tool, timeoutMs, (instance, limit, hook) => instance.invoke(tool, args, limit, undefined, hook)));
  }

  /** Where a registration was made: the first frame outside kiln's runtime, mapped to the author's file. */
  private locate(stack: string): { uri?: string; location?: { line: number; column?: number } } {
    const text = this.mapper ? this.mapper.rewrite(stack) : stack;
    for (const line of text.split('\n')) {
      const m = /\(?((?:[^\s():]|:(?!\d))+):(\d+):(\d+)\)?\s*$/.exec(line.trim());
      if (!m || /kiln-bdd|^bundle:|<prelude>|\bprelude\b/.test(m[1])) continue;
      return { uri: m[1].replace(/^file:\/\/\/?/, ''), location: { line: Number(m[2]), column: Number(m[3]) } };
    }
    return {};
  }

  /** A step's error as the author should read it: the message, then the frames of their own files. */
  private errorText(error: { message: string; stack: string }): string {
    const stack = (this.mapper ? this.mapper.rewrite(error.stack) : error.stack).split('\n')
      .filter((l) => l.trim() && !/kiln-bdd|<prelude>|bundle:|\(native\)$/.test(l));
    return [this.mapper ? this.mapper.rewrite(error.message) : error.message, ...stack].join('\n');
  }

  /** Registrations, matching and test cases; returns the planned test cases by pickle id. */
  async prepare(pickles: Pickle[]): Promise<Map<string, Planned[]>> {
    this.mapper = await this.image.artifact.mapper();
        this.setup = await this.call(0, this.NONE(), { op: 'setup' }, this.registry.policy.limits.timeoutMs);
    for (const p of this.setup.parameterTypes) {
      const ref = this.locate(p.stack);
      this.emit({ parameterType: { id: p.id, name: p.name, regularExpressions: p.regexps, preferForRegularExpressionMatch: p.preferForRegularExpressionMatch, useForSnippets: p.useForSnippets, sourceReference: ref } });
    }
    for (const s of this.setup.steps) {
      this.stepById.set(s.id, s);
      this.emit({ stepDefinition: { id: s.id, pattern: { source: s.source, type: s.type as any }, sourceReference: this.locate(s.stack) } });
    }
    const HOOK_TYPE: Record<string, string> = { Before: 'BEFORE_TEST_CASE', After: 'AFTER_TEST_CASE', BeforeAll: 'BEFORE_TEST_RUN', AfterAll: 'AFTER_TEST_RUN', BeforeStep: 'BEFORE_TEST_STEP', AfterStep: 'AFTER_TEST_STEP' };
    for (const h of this.setup.hooks) {
      this.hookById.set(h.id, h);
      this.emit({ hook: { id: h.id, ...(h.name ? { name: h.name } : {}), ...(h.tags ? { tagExpression: h.tags } : {}), type: HOOK_TYPE[h.kind] as any, sourceReference: this.locate(h.stack) } });
    }
    const all = pickles.flatMap((p) => p.steps);
    const matched = await this.match(all);
    const byStep = new Map(all.map((st, i) => [st.id, matched[i]]));
    const plans = new Map<string, Planned[]>();
    for (const p of pickles) {
      const hookIds: string[] = await this.call(0, this.NONE(), { op: 'hooksFor', tags: p.tags.map((t) => t.name) }, this.registry.policy.limits.timeoutMs);
      this.scenarioHooks.set(p.id, hookIds);
      const planned: Planned[] = [];
      const hook = (id: string): Planned => ({ kind: 'hook', hookId: id, testStep: { id: this.newId(), hookId: id } });
      for (const id of hookIds) if (this.hookById.get(id)?.kind === 'Before') planned.push(hook(id));
      for (const st of p.steps) {
        const m = byStep.get(st.id) ?? { ids: [] };
        planned.push({
          kind: 'step', pickleStep: st, matches: m.ids, ...(m.error ? { matchError: m.error } : {}),
          testStep: {
            id: this.newId(), pickleStepId: st.id, stepDefinitionIds: m.ids,
            stepMatchArgumentsLists: (m.args ?? []).map((args) => ({ stepMatchArguments: args })),
          },
        });
        if (m.ids.length === 0 && m.snippet) this.snippets.set(st.id, m.snippet);
      }
      // After hooks run in the reverse order of their definition, as in cucumber-js.
      for (const id of [...hookIds].reverse()) if (this.hookById.get(id)?.kind === 'After') planned.push(hook(id));
      plans.set(p.id, planned);
    }
    return plans;
  }

  /** Which definitions match each step. The guest gets the texts and only the kind of each step's argument (a
   *  snippet names its parameter; a large table must not fill the guest). When the batch fails (a pattern that
   *  backtracks past the deadline), each step is matched alone, so only the step that triggers it fails. */
  private async match(all: PickleStep[]): Promise<Matched[]> {
    const input = (st: PickleStep) => ({
      text: st.text, type: st.type,
      argument: st.argument?.dataTable ? { dataTable: {} } : st.argument?.docString ? { docString: {} } : undefined,
    });
    const limit = this.registry.policy.limits.timeoutMs;
    if (all.length === 0) return [];
    try {
      return await this.call(0, this.NONE(), { op: 'match', steps: all.map(input) }, limit);
    } catch (e) {
      if (!(e instanceof KilnError)) throw e;
      const out: Matched[] = [];
      for (const st of all) {
        try {
          out.push((await this.call(0, this.NONE(), { op: 'match', steps: [input(st)] }, Math.min(limit, 5000)))[0]);
        } catch (err) {
          if (!(err instanceof KilnError)) throw err;
          out.push({ ids: [], error: `matching "${st.text.slice(0, 200)}" failed: ${(err as Error).message} (a step pattern or parameter type that backtracks catastrophically on this text?)` });
        }
      }
      return out;
    }
  }

  /** Run every pickle; returns whether the run passed. */
  async run(pickles: Pickle[], plans: Map<string, Planned[]>): Promise<boolean> {
    const testRunStartedId = this.newId();
    this.emit({ testRunStarted: { id: testRunStartedId, timestamp: now() } });
    const testCaseIds = new Map<string, string>();
    for (const p of pickles) {
      const id = this.newId();
      testCaseIds.set(p.id, id);
      this.emit({ testCase: { id, pickleId: p.id, testRunStartedId, testSteps: plans.get(p.id)!.map((x) => x.testStep) } });
    }
    const workers = Math.max(1, Math.min(this.options.parallel, pickles.length || 1));
    for (let w = 0; w < workers; w++) this.fresh.add(w);
    let hooksOk = true;
    let next = 0;
    await Promise.all(Array.from({ length: workers }, async (_, w) => {
      for (let i = next++; i < pickles.length && !this.stopping; i = next++) {
        if (this.fresh.has(w)) {
          this.fresh.delete(w);
          if (!(await this.runHooks(w, 'BeforeAll', testRunStartedId))) {
            hooksOk = false;
            this.stopping = true; // as cucumber-js: a failed BeforeAll runs no scenario
            break;
          }
        }
        await this.runPickle(w, pickles[i], testCaseIds.get(pickles[i].id)!, plans.get(pickles[i].id)!);
      }
      if (!(await this.runHooks(w, 'AfterAll', testRunStartedId))) hooksOk = false;
    }));
    const success = this.failed === 0 && hooksOk;
    this.emit({ testRunFinished: { testRunStartedId, success, timestamp: now() } });
    return success;
  }

  private async runHooks(worker: number, kind: 'BeforeAll' | 'AfterAll', testRunStartedId: string): Promise<boolean> {
    let ok = true;
    const list = this.setup.hooks.filter((h) => h.kind === kind);
    for (const h of kind === 'AfterAll' ? list.reverse() : list) {
      const id = this.newId();
      this.emit({ testRunHookStarted: { id, testRunStartedId, hookId: h.id, workerId: String(worker), timestamp: now() } });
      const result = this.options.dryRun ? this.result({ status: 'SKIPPED', attachments: [], durationMs: 0 }) : await this.invoke(worker, h.file, { op: 'hook', id: h.id }, h.timeout);
      if (result.status === S.FAILED) ok = false;
      this.emit({ testRunHookFinished: { testRunHookStartedId: id, result, timestamp: now() } });
    }
    return ok;
  }

  private result(o: StepOutcome, status?: TestStepResultStatus): TestStepResult {
    const s = status ?? (o.status as TestStepResultStatus);
    const message = o.error ? this.errorText(o.error) : undefined;
    return {
      status: s, duration: duration(o.durationMs),
      ...(message ? { message, exception: { type: /^(\w+):/.exec(message)?.[1] ?? 'Error', message: message.split('\n')[0].replace(/^\w+: /, ''), stackTrace: message } } : {}),
    };
  }

  /** One step or hook call on `worker`, as a result; a timeout or crash is a failed result, and the worker's
   *  guest is fresh for its next scenario. */
  private async invoke(worker: number, file: number, args: Record<string, unknown>, timeoutMs: number, onAttach?: (a: StepOutcome['attachments'][number]) => void): Promise<TestStepResult> {
    const started = Date.now();
    try {
      // { timeout: -1 }: no timeout of its own, as in cucumber-js (the longest a call may take).
      const o: StepOutcome = await this.call(worker, `${BDD_TOOL_PREFIX}${file}`, args, timeoutMs < 0 ? 2 ** 31 - 1 : timeoutMs);
      for (const a of o.attachments ?? []) onAttach?.(a);
      return this.result(o);
    } catch (e) {
      if (!(e instanceof KilnError)) throw e;
      if (!(e instanceof ToolError)) this.fresh.add(worker);
      const text = e instanceof ToolError ? e.detail : `${e.name}: ${e.message}`;
      const message = e.name === 'TimeoutError' ? `${text.replace(/^TimeoutError: tool "[^"]+" did not finish/, 'TimeoutError: the step did not finish')}` : text;
      return this.result({ status: 'FAILED', error: { message, stack: '' }, attachments: [], durationMs: Date.now() - started });
    }
  }

  private async runPickle(worker: number, pickle: Pickle, testCaseId: string, plan: Planned[]): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const held: Envelope[] = [];
      const status = await this.attempt(worker, pickle, testCaseId, plan, attempt, held);
      const failed = status === S.FAILED || (this.options.strict && (status === S.PENDING || status === S.UNDEFINED || status === S.AMBIGUOUS)) || status === S.AMBIGUOUS;
      const retry = failed && attempt < this.options.retry && status === S.FAILED && (this.options.retryTags?.(pickle.tags.map((t) => t.name)) ?? true);
      const finished = held.pop()!; // testCaseFinished
      finished.testCaseFinished = { ...finished.testCaseFinished!, willBeRetried: retry };
      for (const e of [...held, finished]) this.emit(e);
      if (retry) continue;
      if (failed) {
        this.failed++;
        if (this.options.failFast) this.stopping = true;
      }
      return;
    }
  }

  /** One attempt at a test case; its envelopes go to `held`; returns its worst status. */
  private async attempt(worker: number, pickle: Pickle, testCaseId: string, plan: Planned[], attempt: number, held: Envelope[]): Promise<TestStepResultStatus> {
    const startedId = this.newId();
    held.push({ testCaseStarted: { id: startedId, testCaseId, attempt, workerId: String(worker), timestamp: now() } });
    let worst: TestStepResultStatus = S.PASSED;
    let worstMessage: string | undefined;
    let skipRest = false;
    const dry = this.options.dryRun;
    // The World: a constructor that throws (or hangs) fails the scenario at its first step, with its error.
    let worldError: string | undefined;
    if (!dry) {
      try {
        const begun = await this.call(worker, this.NONE(), { op: 'begin', parameters: this.options.worldParameters ?? {} }, this.registry.policy.limits.timeoutMs);
        if (begun?.error) worldError = `the World could not be made: ${this.errorText(begun.error)}`;
      } catch (e) {
        if (!(e instanceof KilnError)) throw e;
        if (!(e instanceof ToolError)) this.fresh.add(worker);
        worldError = `the World could not be made: ${e instanceof ToolError ? e.detail : `${e.name}: ${e.message}`}`;
      }
    }
    const pickleInfo = { id: pickle.id, name: pickle.name, uri: pickle.uri, tags: pickle.tags.map((t) => t.name) };
    const worldFailed = worldError !== undefined;
    const stepHooks = (kind: string) => this.setup.hooks.filter((h) => h.kind === kind && (!h.tags || this.tagged(h, pickle)));
    for (const x of plan) {
      const testStepId = x.testStep.id;
      held.push({ testStepStarted: { testCaseStartedId: startedId, testStepId, timestamp: now() } });
      const attach = (a: StepOutcome['attachments'][number]) => held.push({ attachment: { ...a, contentEncoding: a.contentEncoding as any, testCaseStartedId: startedId, testStepId, timestamp: now() } });
      let result: TestStepResult;
      if (worldError !== undefined) {
        result = { status: S.FAILED, duration: duration(0), message: worldError, exception: { type: 'Error', message: worldError.split('\n')[0], stackTrace: worldError } };
        worldError = undefined;
        skipRest = true;
      } else if (x.kind === 'hook') {
        const h = this.hookById.get(x.hookId)!;
        const isAfter = h.kind === 'After';
        if (dry || (skipRest && !isAfter) || (isAfter && (this.fresh.has(worker) || worldFailed))) result = { status: S.SKIPPED, duration: duration(0) };
        else {
          result = await this.invoke(worker, h.file, {
            op: 'hook', id: h.id, pickle: pickleInfo, testCaseStartedId: startedId,
            ...(isAfter ? { result: { status: worst, ...(worstMessage ? { message: worstMessage } : {}) }, willBeRetried: false } : {}),
          }, h.timeout, attach);
        }
      } else if (x.matchError) {
        result = { status: S.FAILED, duration: duration(0), message: x.matchError };
      } else if (x.matches.length === 0) {
        result = { status: S.UNDEFINED, duration: duration(0) };
      } else if (x.matches.length > 1) {
        const list = x.matches.map((id) => {
          const d = this.stepById.get(id)!;
          const at = this.locate(d.stack);
          return `  ${JSON.stringify(d.source)} - ${at.uri ?? '?'}:${at.location?.line ?? '?'}`;
        });
        result = { status: S.AMBIGUOUS, duration: duration(0), message: `Multiple step definitions match "${x.pickleStep.text}":\n${list.join('\n')}` };
      } else if (dry || skipRest) {
        result = { status: S.SKIPPED, duration: duration(0) };
      } else {
        const def = this.stepById.get(x.matches[0])!;
        result = await this.runStep(worker, def, x.pickleStep, pickleInfo, stepHooks, attach);
      }
      if (RANK[result.status] > RANK[worst]) {
        worst = result.status;
        worstMessage = result.message;
      }
      if (result.status !== S.PASSED && !(x.kind === 'hook' && this.hookById.get(x.hookId)!.kind === 'After')) skipRest = true;
      held.push({ testStepFinished: { testCaseStartedId: startedId, testStepId, testStepResult: result, timestamp: now() } });
      const snippet = x.kind === 'step' ? this.snippets.get(x.pickleStep.id) : undefined;
      if (snippet !== undefined && x.kind === 'step' && result.status === S.UNDEFINED) {
        held.push({ suggestion: { id: this.newId(), pickleStepId: x.pickleStep.id, snippets: [{ language: 'javascript', code: snippet }] } });
        this.snippets.delete(x.pickleStep.id);
      }
    }
    if (!dry && !this.fresh.has(worker)) await this.call(worker, this.NONE(), { op: 'end' }, this.registry.policy.limits.timeoutMs).catch(() => {});
    held.push({ testCaseFinished: { testCaseStartedId: startedId, willBeRetried: false, timestamp: now() } });
    return worst;
  }

  private tagged(h: Setup['hooks'][number], pickle: Pickle): boolean {
    // The guest decided which scenario hooks apply (hooksFor); step hooks with tags follow the same answer.
    return this.scenarioHooks.get(pickle.id)?.includes(h.id) ?? false;
  }

  private readonly scenarioHooks = new Map<string, string[]>();
  /** Ready-to-paste step definitions for undefined steps, by pickle step id (sent once, as cucumber-js does,
   *  with the step's result). */
  private readonly snippets = new Map<string, string>();

  private async runStep(worker: number, def: Setup['steps'][number], step: PickleStep, pickleInfo: unknown, stepHooks: (k: string) => Setup['hooks'], attach: (a: any) => void): Promise<TestStepResult> {
    for (const h of stepHooks('BeforeStep')) {
      const r = await this.invoke(worker, h.file, { op: 'hook', id: h.id, pickle: pickleInfo }, h.timeout, attach);
      if (r.status === S.FAILED) return r;
    }
    const r = await this.invoke(worker, def.file, { op: 'step', id: def.id, text: step.text, argument: step.argument }, def.timeout, attach);
    if (this.fresh.has(worker)) return r;
    for (const h of stepHooks('AfterStep')) {
      const after = await this.invoke(worker, h.file, { op: 'hook', id: h.id, pickle: pickleInfo, result: { status: r.status } }, h.timeout, attach);
      if (after.status === S.FAILED && r.status === S.PASSED) return after;
    }
    return r;
  }
}

/** The meta envelope: which implementation ran. */
export function meta(): Envelope {
  return {
    meta: {
      protocolVersion: '34.2.1',
      implementation: { name: 'kiln', version: kilnVersion() },
      runtime: { name: 'node.js', version: process.versions.node },
      os: { name: process.platform },
      cpu: { name: process.arch },
    },
  };
}
