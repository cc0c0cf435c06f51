// The compatibility corpus: popular npm packages, each used by a small extension in test/compat/<name>.js on
// fixed inputs, built by the real `kiln build` into an artifact and called by the real `kiln run` in a guest;
// the same file's `run` is imported and called in Node, and the two results are compared.
//
// Every package is built and run, and the table is printed whatever happens. The test asserts identical
// results for MUST_PASS (what works today: a regression fails the test). A package in KNOWN_GAPS fails
// because the guest's platform lacks something: the entry records the first line of the failure and the cause
// diagnosed, and is the work order for the platform. Nothing here works around a gap: a fixture uses its package as an author would.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { kiln, root, tempDir } from './helpers.mjs';

// A guest's local time zone is UTC; Node is put there too, before any fixture runs, so that date libraries
// formatting local time agree.
process.env.TZ = 'UTC';

/** [npm package, fixture file stem under test/compat/ (the tool is `compat.<stem>`)] */
const PACKAGES = [
  ['zod', 'zod'],
  ['lodash-es', 'lodash-es'],
  ['date-fns', 'date-fns'],
  ['yaml', 'yaml'],
  ['marked', 'marked'],
  ['uuid', 'uuid'],
  ['nanoid', 'nanoid'],
  ['htmlparser2', 'htmlparser2'],
  ['cheerio', 'cheerio'],
  ['ajv', 'ajv'],
  ['dayjs', 'dayjs'],
  ['luxon', 'luxon'],
  ['semver', 'semver'],
  ['handlebars', 'handlebars'],
  ['papaparse', 'papaparse'],
  ['fast-xml-parser', 'fast-xml-parser'],
  ['@noble/hashes', 'noble-hashes'],
  ['jose', 'jose'],
  ['js-yaml', 'js-yaml'],
  ['markdown-it', 'markdown-it'],
  ['immer', 'immer'],
  ['ramda', 'ramda'],
  ['qs', 'qs'],
  ['mustache', 'mustache'],
  ['diff', 'diff'],
  ['fuse.js', 'fuse-js'],
  ['decimal.js', 'decimal-js'],
  ['valibot', 'valibot'],
  ['json5', 'json5'],
  ['change-case', 'change-case'],
  ['graphql', 'graphql'],
  ['yup', 'yup'],
  ['joi', 'joi'],
  ['moment', 'moment'],
  ['jsonpath-plus', 'jsonpath-plus'],
  ['pako', 'pako'],
  ['crypto-js', 'crypto-js'],
  ['tweetnacl', 'tweetnacl'],
  ['rxjs', 'rxjs'],
  ['he', 'he'],
  ['entities', 'entities'],
  ['slugify', 'slugify'],
  ['pluralize', 'pluralize'],
  ['big.js', 'big-js'],
  ['bignumber.js', 'bignumber-js'],
  ['superstruct', 'superstruct'],
  ['immutable', 'immutable'],
  ['eventemitter3', 'eventemitter3'],
  ['ms', 'ms'],
  ['bytes', 'bytes'],
  ['ini', 'ini'],
  ['@sinclair/typebox', 'typebox'],
  ['liquidjs', 'liquidjs'],
  ['ulid', 'ulid'],
  ['mathjs', 'mathjs'],
  ['bn.js', 'bn-js'],
  ['safe-buffer', 'safe-buffer'], // imports 'buffer': npm's buffer package, installed in this tree, serves it
  ['iconv-lite', 'iconv-lite'], // the same, through safer-buffer
  ['readable-stream', 'readable-stream'],
  ['sanitize-html', 'sanitize-html'],
  ['turndown', 'turndown'], // parses with a DOMParser: linkedom's, lent as `window` while it loads
  ['linkedom', 'linkedom'],
  ['csv-parse', 'csv-parse'],
  ['xml2js', 'xml2js'],
  ['jsonwebtoken', 'jsonwebtoken'],
];

/** Identical to Node today: each must stay so. */
const MUST_PASS = new Set([
  'lodash-es', 'date-fns', 'yaml', 'marked', 'htmlparser2', 'cheerio', 'ajv', 'semver', 'handlebars', 'papaparse',
  'fast-xml-parser', 'js-yaml', 'markdown-it', 'immer', 'ramda', 'qs', 'mustache', 'diff', 'fuse.js', 'decimal.js',
  'valibot', 'json5', 'change-case', 'zod', 'uuid', 'nanoid', '@noble/hashes', 'jose', 'dayjs', 'luxon',
  'graphql', 'yup', 'joi', 'moment', 'jsonpath-plus', 'pako', 'crypto-js', 'tweetnacl', 'rxjs', 'he', 'entities',
  'slugify', 'pluralize', 'big.js', 'bignumber.js', 'superstruct', 'immutable', 'eventemitter3', 'ms', 'bytes', 'ini',
  '@sinclair/typebox', 'liquidjs', 'ulid', 'mathjs', 'bn.js', 'safe-buffer', 'iconv-lite', 'readable-stream',
  'sanitize-html', 'turndown', 'csv-parse', 'xml2js', 'jsonwebtoken',
]);

/**
 * Not identical today: the stage that fails (a 'call' gap must still build: the bundler is not the cause),
 * the first line of the failure, and the cause diagnosed (what else is missing behind the first failure was
 * found by supplying the first missing piece in a scratch build, never here). When a gap closes the test says
 * so: move the package to MUST_PASS.
 */
const KNOWN_GAPS = {
  // The language: quickjs-ng has no legacy RegExp statics (`RegExp.$1` is undefined after a match; Node has
  // them, from the legacy RegExp features proposal): linkedom's doctype setter reads the name from RegExp.$1 and
  // gets none. Everything else in the fixture agrees.
  linkedom: { stage: 'call', failure: '$.doctype: guest "<!DOCTYPE >", Node "<!DOCTYPE html>"' },
};

const BUILD_CONCURRENCY = 2;
/** Artifacts one `kiln run` loads: each live guest reserves its memory limit from [limits] totalMemoryBytes,
 *  which the whole corpus in one run would exceed. */
const RUN_CHUNK = 30;

/** Build every fixture, BUILD_CONCURRENCY at a time; resolves with { stem: { artifact, ms } | { error, ms } }
 *  (ms: the build's wall time, printed in the table). */
async function buildAll(dir) {
  const built = {};
  const queue = PACKAGES.map(([, stem]) => stem);
  const worker = async () => {
    for (let stem = queue.shift(); stem !== undefined; stem = queue.shift()) {
      const artifact = join(dir, `${stem}.wasm`);
      const started = Date.now();
      const r = await kiln(['build', join(root, 'test/compat', `${stem}.js`), '-o', artifact]);
      const ms = Date.now() - started;
      built[stem] = r.code === 0 ? { artifact, ms } : { ms, error: firstLine(r.stderr.replace(/^error: /, '').replaceAll(join(root, 'test/compat') + '/', '')) };
    }
  };
  await Promise.all(Array.from({ length: BUILD_CONCURRENCY }, worker));
  return built;
}

const firstLine = (s) => String(s).trim().split('\n')[0];

/** The script `kiln run` runs: calls every built tool with its fixture's arguments, catching each failure. */
function script(calls) {
  return `const calls = ${JSON.stringify(calls)};
const out = {};
for (const [stem, args] of calls) {
  try {
    out[stem] = { value: await plugins['compat.' + stem](args) };
  } catch (e) {
    const message = e && e.message !== undefined ? String(e.message) : String(e);
    out[stem] = { error: e && e.name && !message.startsWith(e.name + ': ') ? e.name + ': ' + message : message };
  }
}
out
`;
}

/** The first path at which `a` and `b` differ, for the table. */
function firstDifference(a, b, path = '$') {
  if (Object.is(a, b)) return undefined;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) {
    return `${path}: guest ${JSON.stringify(a)?.slice(0, 80)}, Node ${JSON.stringify(b)?.slice(0, 80)}`;
  }
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])];
  for (const k of keys) {
    const d = firstDifference(a[k], b[k], Array.isArray(a) ? `${path}[${k}]` : `${path}.${k}`);
    if (d) return d;
  }
  return undefined;
}

test(`the compatibility corpus: ${PACKAGES.length} npm packages give the same results in a guest as in Node`, async (t) => {
  // Node: the same files, imported.
  const node = {};
  const args = {};
  for (const [pkg, stem] of PACKAGES) {
    const mod = await import(pathToFileURL(join(root, 'test/compat', `${stem}.js`)).href);
    args[stem] = mod.args ?? {};
    node[stem] = JSON.parse(JSON.stringify(await mod.run(structuredClone(args[stem])) ?? null));
    assert.ok(node[stem] !== null, `${pkg}: the fixture returns something in Node`);
  }

  // The guest: every fixture built into an artifact, then called by `kiln run`.
  const dir = tempDir(t);
  const buildStarted = Date.now();
  const built = await buildAll(dir);
  const buildMs = Date.now() - buildStarted;
  const ok = PACKAGES.map(([, stem]) => stem).filter((stem) => built[stem].artifact);
  // The guest calls, RUN_CHUNK artifacts to a `kiln run`, one run after another.
  const guest = {};
  const runs = [];
  for (let i = 0; i < ok.length; i += RUN_CHUNK) {
    const chunk = ok.slice(i, i + RUN_CHUNK);
    const scriptFile = join(dir, `calls-${i}.js`);
    writeFileSync(scriptFile, script(chunk.map((stem) => [stem, args[stem]])));
    const r = await kiln(['run', scriptFile, ...chunk.map((stem) => built[stem].artifact), '--timeout-ms', '110000'], { cwd: dir });
    if (r.code === 0) Object.assign(guest, JSON.parse(r.stdout)); // if a run itself fails, the table still shows it
    runs.push(r);
  }
  const failedRun = runs.find((r) => r.code !== 0);
  const runMs = Date.now() - buildStarted - buildMs;

  const rows = [];
  for (const [pkg, stem] of PACKAGES) {
    let status, detail = '';
    if (built[stem].error) [status, detail] = ['build fails', built[stem].error];
    else if (!guest[stem]) [status, detail] = ['call fails', `kiln run failed: ${firstLine(failedRun?.stderr)}`];
    else if ('error' in guest[stem]) [status, detail] = ['call fails', firstLine(guest[stem].error)];
    else {
      const d = firstDifference(guest[stem].value, node[stem]);
      [status, detail] = d ? ['differs', d] : ['identical', ''];
    }
    rows.push({ pkg, stem, status, detail, ms: built[stem].ms });
  }
  const identical = rows.filter((x) => x.status === 'identical');
  const lines = rows.map((x) => `${x.pkg.padEnd(17)} ${x.status.padEnd(11)} ${`${x.ms} ms`.padStart(9)}  ${x.detail.slice(0, 200)}`);
  lines.push(`${identical.length} of ${PACKAGES.length} packages identical to Node; builds ${buildMs} ms (${BUILD_CONCURRENCY} at a time), ${runs.length} kiln runs ${runMs} ms`);
  for (const line of lines) t.diagnostic(line);

  for (const r of runs) assert.equal(r.code, 0, `kiln run: ${r.stderr}`);
  // The lists (checked after the table is printed) are a partition of the corpus: a package is either asserted or has a diagnosed gap.
  for (const [pkg] of PACKAGES) assert.ok(MUST_PASS.has(pkg) !== pkg in KNOWN_GAPS, `${pkg} must be in exactly one of MUST_PASS and KNOWN_GAPS`);
  for (const pkg of [...MUST_PASS, ...Object.keys(KNOWN_GAPS)]) assert.ok(PACKAGES.some(([p]) => p === pkg), `${pkg} is not in PACKAGES`);

  for (const x of rows) {
    if (MUST_PASS.has(x.pkg)) {
      assert.equal(x.status, 'identical', `${x.pkg} (MUST_PASS) ${x.status}: ${x.detail}`);
      assert.deepEqual(guest[x.stem].value, node[x.stem], x.pkg);
    } else {
      // the list is exact: a closed gap must move to MUST_PASS, and a gap must fail the way it is recorded
      assert.notEqual(x.status, 'identical', `${x.pkg} is now identical to Node: move it from KNOWN_GAPS to MUST_PASS`);
      const gap = KNOWN_GAPS[x.pkg];
      if (gap?.stage === 'call') assert.notEqual(x.status, 'build fails', `${x.pkg} built before (its gap is in the platform): ${x.detail}`);
      assert.equal(x.detail, gap?.failure, `${x.pkg} fails differently from KNOWN_GAPS`);
    }
  }
});
