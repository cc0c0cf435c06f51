// `kiln bdd --format NAME[:FILE]`: the report formats, each a pure consumer of the run's Cucumber Messages
// (@cucumber/messages 34, the stream cucumber-js emits with `--format message`). They are cucumber-js 13's own:
// - pretty, progress, summary: @cucumber/pretty-formatter's printers (./formats/terminal.ts);
// - junit: @cucumber/junit-xml-formatter's JUnitXmlPrinter, suite name "kiln bdd" (./formats/junit.ts);
// - html: @cucumber/html-formatter's CucumberHtmlStream (./formats/html.ts);
// - message: one envelope per line (NDJSON);
// - json: the legacy Cucumber JSON report, rebuilt from the messages (./formats/json.ts).
// For the same envelopes every format writes what cucumber-js writes, byte for byte (test/bdd-formats.test.mjs
// feeds them a real cucumber-js run's stream and compares).
//
// What the runner has to put in the stream for them (as cucumber-js does):
// - an undefined step's snippets: a `suggestion` envelope { id, pickleStepId, snippets: [{ language, code }] }
//   before testRunFinished; the summary (pretty, progress, summary) ends with "You can implement missing steps
//   with the snippets below:" and each distinct snippet;
// - a failed step's `testStepResult`: `message` (the error with its stack: the JSON report's `error_message`) and
//   `exception` { type, message, stackTrace } (pretty prints stackTrace, JUnit the type, message and stackTrace);
// - an ambiguous step: its testStep lists every matching `stepDefinitionIds` (pretty prints each with its location);
// - `testCaseFinished.willBeRetried` on an attempt that will be retried (JSON, JUnit and the summaries count only
//   last attempts);
// - one test case's envelopes together, testCaseStarted to testCaseFinished: pretty prints a step's line when the
//   step finishes, so interleaved test cases (parallel workers) would interleave their lines;
// - always a `testRunFinished` (with `exception` if the run broke): the summaries and JUnit are written on it.
//
// Paths: `uri`s of features and of step definition, hook and parameter type sources are shown relative to `cwd`
// when they are absolute paths or file: URLs under it, in every format (cucumber-js's own are relative already).
// `strict` changes no format: cucumber-js's formatters print statuses as they are; that pending and undefined
// fail the run is `testRunFinished.success` and the exit code, both the runner's.
//
// The formatter packages load when a format first needs them (all three together cost a CLI start about as much
// again as pretty alone): a formatter queues the envelopes it gets until then, and finish() waits for it.
import { isAbsolute, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Envelope } from '@cucumber/messages';
import type { Formatter } from './formats/formatter.js';
import { JsonReport } from './formats/json.js';

export type FormatName = 'pretty' | 'progress' | 'summary' | 'json' | 'junit' | 'message' | 'html';
export const FORMAT_NAMES: FormatName[] = ['pretty', 'progress', 'summary', 'json', 'junit', 'message', 'html'];


export interface FormatOptions {
  /** URIs and paths are shown relative to this directory. */
  cwd: string;
  /** ANSI colours in pretty, progress and summary (the caller decides: a TTY, NO_COLOR, FORCE_COLOR…). */
  colors?: boolean;
  /** Accepted for the command line's sake; no format depends on it (see above). */
  strict?: boolean;
}

export const JUNIT_SUITE_NAME = 'kiln bdd';

/** `write` receives text for the destination (stdout or a file). `cwd` makes URIs/paths relative. */
export function createFormatter(name: FormatName, write: (text: string) => void, options: FormatOptions): Formatter {
  const relativize = relativizer(options.cwd);
  const inner = createInner(name, write, options);
  return {
    update: (envelope) => inner.update(relativize(envelope)),
    finish: () => inner.finish(),
  };
}

function createInner(name: FormatName, write: (text: string) => void, options: FormatOptions): Formatter {
  switch (name) {
    case 'pretty':
    case 'progress':
    case 'summary':
      return lazy(async () => (await import('./formats/terminal.js')).terminalFormatter(name, write, options.colors ?? false));
    case 'junit':
      return lazy(async () => (await import('./formats/junit.js')).junitFormatter(write, JUNIT_SUITE_NAME));
    case 'html':
      return lazy(async () => (await import('./formats/html.js')).htmlFormatter(write));
    case 'json':
      return jsonFormatter(write);
    case 'message':
      return { update: (envelope) => write(`${JSON.stringify(envelope)}\n`), finish: async () => {} };
    default:
      throw new Error(`unknown format "${String(name)}" (known: ${FORMAT_NAMES.join(', ')})`);
  }
}

/** A formatter made once its module has loaded; envelopes before that wait in order. Load errors reach finish(). */
function lazy(make: () => Promise<Formatter>): Formatter {
  let inner: Formatter | undefined;
  let queue: Envelope[] | undefined = [];
  let failure: { error: unknown } | undefined;
  const ready = make()
    .then((formatter) => {
      const queued = queue!;
      queue = undefined;
      inner = formatter;
      for (const envelope of queued) formatter.update(envelope);
    })
    .catch((error: unknown) => {
      queue = undefined;
      failure = { error };
    });
  return {
    update(envelope) {
      if (inner) inner.update(envelope);
      else queue?.push(envelope);
    },
    async finish() {
      await ready;
      if (failure) throw failure.error;
      await inner!.finish();
    },
  };
}

function jsonFormatter(write: (text: string) => void): Formatter {
  const report = new JsonReport();
  let written = false;
  const flush = () => {
    if (written) return;
    written = true;
    write(JSON.stringify(report.report(), null, 2));
  };
  return {
    update(envelope) {
      report.update(envelope);
      if (envelope.testRunFinished) flush();
    },
    // A run that ended without testRunFinished still leaves a report of what ran.
    finish: async () => flush(),
  };
}

/** Rewrites absolute `uri`s (paths or file: URLs) under `cwd` as relative, POSIX-separated paths. */
function relativizer(cwd: string): (envelope: Envelope) => Envelope {
  const rel = (uri: string | undefined): string | undefined => {
    if (uri === undefined) return uri;
    let path = uri;
    if (uri.startsWith('file:')) {
      try { path = fileURLToPath(uri); } catch { return uri; }
    }
    if (!isAbsolute(path)) return uri;
    const r = relative(cwd, path);
    if (r === '' || r.startsWith('..') || isAbsolute(r)) return uri;
    return r.split(sep).join('/');
  };
  const withRef = <T extends { sourceReference: { uri?: string } }>(item: T): T => {
    const uri = rel(item.sourceReference.uri);
    return uri === item.sourceReference.uri ? item : { ...item, sourceReference: { ...item.sourceReference, uri } };
  };
  const withUri = <T extends { uri: string }>(item: T): T => {
    const uri = rel(item.uri)!;
    return uri === item.uri ? item : { ...item, uri };
  };
  return (e) => {
    if (e.source) {
      const source = withUri(e.source);
      return source === e.source ? e : { ...e, source };
    }
    if (e.gherkinDocument?.uri !== undefined) {
      const gherkinDocument = withUri(e.gherkinDocument as typeof e.gherkinDocument & { uri: string });
      return gherkinDocument === e.gherkinDocument ? e : { ...e, gherkinDocument };
    }
    if (e.pickle) {
      const pickle = withUri(e.pickle);
      return pickle === e.pickle ? e : { ...e, pickle };
    }
    if (e.stepDefinition) {
      const stepDefinition = withRef(e.stepDefinition);
      return stepDefinition === e.stepDefinition ? e : { ...e, stepDefinition };
    }
    if (e.hook) {
      const hook = withRef(e.hook);
      return hook === e.hook ? e : { ...e, hook };
    }
    if (e.parameterType?.sourceReference) {
      const parameterType = withRef(e.parameterType as typeof e.parameterType & { sourceReference: { uri?: string } });
      return parameterType === e.parameterType ? e : { ...e, parameterType };
    }
    return e;
  };
}
