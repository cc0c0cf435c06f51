// Feature files for `kiln bdd`: found (files, or directories scanned for *.feature), parsed with
// @cucumber/gherkin into Cucumber Messages (source, gherkinDocument, pickles: Background, Scenario Outline +
// Examples, Rule, data tables, doc strings, tags, `# language:`), and filtered by --tags and --name. A file that
// does not parse fails alone: its parse error is reported as an envelope and counted as a failure.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { generateMessages } from '@cucumber/gherkin';
import { IdGenerator, SourceMediaType, type Envelope, type Pickle } from '@cucumber/messages';
import parseTagExpression from '@cucumber/tag-expressions';
import { KilnError } from '../errors.js';

/** At most this many feature files in one run (a bound on a directory walk). */
const MAX_FEATURE_FILES = 10_000;

/** Every *.feature under `paths` (a file is taken as it is), sorted, each once. */
export function findFeatures(paths: string[], cwd: string): string[] {
  const found = new Set<string>();
  const walk = (dir: string, depth: number) => {
    if (depth > 32) return;
    for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      if (e.name.startsWith('.') || e.name === 'node_modules') continue;
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p, depth + 1);
      else if (e.isFile() && e.name.endsWith('.feature')) found.add(p);
      if (found.size > MAX_FEATURE_FILES) throw new KilnError(`more than ${MAX_FEATURE_FILES} feature files under ${dir}`);
    }
  };
  for (const p of paths) {
    const abs = resolve(cwd, p.replace(/:\d+(:\d+)*$/, '')); // features/a.feature:12 names a line (see lineFilter)
    if (!existsSync(abs)) throw new KilnError(`kiln bdd: ${p}: no such file or directory`);
    if (statSync(abs).isDirectory()) walk(abs, 0);
    else found.add(abs);
  }
  return [...found];
}

/** `path:line` arguments: the lines each file's scenarios must start at (or include, for an Examples row). */
export function lineFilter(paths: string[], cwd: string): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const p of paths) {
    const m = /^(.*?)((?::\d+)+)$/.exec(p);
    if (!m) continue;
    const lines = m[2].split(':').filter(Boolean).map(Number);
    out.set(resolve(cwd, m[1]), [...(out.get(resolve(cwd, m[1])) ?? []), ...lines]);
  }
  return out;
}

export interface ParsedFeatures {
  /** source, gherkinDocument and pickle envelopes (and parseError ones), in file order. */
  envelopes: Envelope[];
  /** The pickles to run, after the filters. */
  pickles: Pickle[];
  /** Files that did not parse. */
  errors: number;
}

export interface PickleFilter {
  tags?: string;
  names?: string[];
  lines?: Map<string, number[]>;
}

/** Parse `files` (URIs relative to `cwd`, '/'-separated, as cucumber-js writes them) and filter the pickles. */
export function parseFeatures(files: string[], cwd: string, filter: PickleFilter, newId: () => string = IdGenerator.incrementing()): ParsedFeatures {
  let tagMatch: ((tags: string[]) => boolean) | undefined;
  if (filter.tags) {
    try {
      const e = parseTagExpression(filter.tags);
      tagMatch = (tags) => e.evaluate(tags);
    } catch (e) {
      throw new KilnError(`kiln bdd --tags ${JSON.stringify(filter.tags)}: ${(e as Error).message}`);
    }
  }
  const names = (filter.names ?? []).map((n) => {
    try {
      return new RegExp(n);
    } catch (e) {
      throw new KilnError(`kiln bdd --name ${JSON.stringify(n)}: not a regular expression: ${(e as Error).message}`);
    }
  });
  const envelopes: Envelope[] = [];
  const pickles: Pickle[] = [];
  let errors = 0;
  for (const file of files) {
    const uri = relative(cwd, file).split(sep).join('/');
    const data = readFileSync(file, 'utf8');
    const lines = filter.lines?.get(file);
    for (const e of generateMessages(data, uri, SourceMediaType.TEXT_X_CUCUMBER_GHERKIN_PLAIN, { newId, includeSource: true, includeGherkinDocument: true, includePickles: true })) {
      envelopes.push(e);
      if (e.parseError) errors++;
      if (!e.pickle) continue;
      const p = e.pickle;
      if (tagMatch && !tagMatch(p.tags.map((t) => t.name))) continue;
      if (names.length && !names.some((r) => r.test(p.name))) continue;
      if (lines && !lines.some((l) => pickleLines(envelopes, p).includes(l))) continue;
      pickles.push(p);
    }
  }
  return { envelopes, pickles, errors };
}

/** The lines a pickle answers to in `path:line`: its scenario's line and, for an outline, its Examples row's. */
function pickleLines(envelopes: Envelope[], p: Pickle): number[] {
  const doc = envelopes.find((e) => e.gherkinDocument?.uri === p.uri)?.gherkinDocument;
  const lines: number[] = [];
  const visit = (children: readonly any[]) => {
    for (const c of children) {
      if (c.rule) visit(c.rule.children);
      const s = c.scenario;
      if (!s) continue;
      if (p.astNodeIds.includes(s.id)) lines.push(s.location.line);
      for (const ex of s.examples ?? []) for (const row of ex.tableBody ?? []) if (p.astNodeIds.includes(row.id)) lines.push(row.location.line);
    }
  };
  visit(doc?.feature?.children ?? []);
  return lines;
}
