// Types for kiln extensions: exactly the globals a guest has (docs/extensions.md) — the extension API here,
// the web platform in web.d.ts. Extend types/tsconfig.json (ES2024, no DOM: what type-checks there runs in a
// guest), or reference this file with /// <reference path="…/kiln.d.ts" />.
/// <reference path="./web.d.ts" />
import type { StandardSchemaV1 } from '@standard-schema/spec';
export {};

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A declared command: a shell line (run by /bin/sh -c), or a spec. See docs/capabilities.md. */
type KilnCommand =
  | string
  | {
      run: string | string[];
      timeoutMs?: number;
      env?: string[];
      cwd?: string;
      output?: 'text' | 'json' | 'lines';
      persistent?: boolean;
      allowDash?: string[];
    };

interface KilnAllow {
  commands?: Record<string, KilnCommand>;
  /** Alias of commands. */
  exec?: Record<string, KilnCommand>;
  /** Hosts (api.box.com), wildcard suffixes (*.box.com), optionally :port. Absent or empty: no network. */
  net?: string[];
  /** Hosts the session's browser may load for this tool (net's grammar). Absent or empty: no page, no context. */
  browser?: string[];
  /** Other extensions' tools this tool may call through plugins[...]; its own file's tools need no entry. */
  tools?: string[];
  /** Environment names process.env may show, when the operator allows them too ([scripting] allowEnv). */
  env?: string[];
  /** Names of the operator's [secrets.*]: the host adds each to this tool's requests to that secret's hosts.
   *  The handler never sees the value (not in process.env, not in any request or response). */
  secrets?: string[];
  /** Workspace path prefixes (relative to the operator's [fs] root; no absolute paths, no ".."): `read` for
   *  readFile, readdir and stat, `write` for writeFile, appendFile, mkdir, rm and rename. Independent lists. */
  fs?: { read?: string[]; write?: string[] };
}

/** A tool's schema: a JSON Schema object, or a Standard Schema validator (zod 4, valibot through
 *  @valibot/to-json-schema's toStandardJsonSchema, ...) that can write itself as JSON Schema
 *  (`~standard.jsonSchema`), which the build does (docs/extensions.md). */
type KilnSchema = { readonly [key: string]: unknown } | StandardSchemaV1;

/** The value a schema describes: a Standard Schema's output type; a JSON Schema literal's type (written inline in
 *  defineTool, or `as const`) through KilnFromJson; `any` for a schema whose type is not a literal (a
 *  Record<string, unknown>, a widened object) or no schema at all, as without types. */
type KilnInfer<S> =
  S extends StandardSchemaV1 ? StandardSchemaV1.InferOutput<S>
  : S extends { readonly type: 'object' } ? KilnFromJson<S>
  : any;

/** A JSON Schema literal's type, bounded to 10 levels (deeper is unknown): const, enum, anyOf/oneOf, type (one or
 *  a list: string, number, integer, boolean, null, array with items, object with properties and required; a
 *  property with a `default` is always there, since the host fills defaults in). What it does not read ($ref,
 *  allOf, not, if/then, prefixItems) is unknown: a check the type does not see is still made by the host. An object
 *  without `additionalProperties: false` may have other keys, typed unknown. */
type KilnFromJson<S, D extends number = 10> =
  [D] extends [never] ? unknown
  : S extends { readonly const: infer C } ? C
  : S extends { readonly enum: readonly (infer E)[] } ? E
  : S extends { readonly anyOf: readonly (infer M)[] } ? KilnFromJson<M, KilnDepth[D]>
  : S extends { readonly oneOf: readonly (infer M)[] } ? KilnFromJson<M, KilnDepth[D]>
  : S extends { readonly type: infer T } ? KilnJsonType<T extends readonly (infer U)[] ? U : T, S, KilnDepth[D]>
  : unknown;
type KilnDepth = [never, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
type KilnJsonType<T, S, D extends number> =
  T extends 'string' ? string
  : T extends 'number' | 'integer' ? number
  : T extends 'boolean' ? boolean
  : T extends 'null' ? null
  : T extends 'array' ? (S extends { readonly items: infer I } ? (I extends readonly unknown[] ? unknown[] : KilnFromJson<I, D>[]) : unknown[])
  : T extends 'object' ? KilnObject<S, D>
  : unknown;
type KilnObject<S, D extends number, P = S extends { readonly properties: infer Q } ? Q : {}, R = KilnRequired<S> | KilnDefaulted<P>> = KilnFlat<{
  -readonly [K in keyof P as K extends R ? K : never]: KilnFromJson<P[K], D>;
} & {
  -readonly [K in keyof P as K extends R ? never : K]?: KilnFromJson<P[K], D>;
} & (S extends { readonly additionalProperties: false } ? {} : { [key: string]: unknown })>;
/** One object type instead of an intersection, for readable messages. */
type KilnFlat<T> = { [K in keyof T]: T[K] };
type KilnRequired<S> = S extends { readonly required: readonly (infer R)[] } ? R : never;
type KilnDefaulted<P> = { [K in keyof P]: P[K] extends { readonly default: unknown } ? K : never }[keyof P];

/** What a handler may return: anything without an outputSchema; with one, the value it describes. */
type KilnResult<O> = [O] extends [undefined] ? unknown : KilnInfer<O> | PromiseLike<KilnInfer<O>>;

interface KilnToolManifest<I extends KilnSchema | undefined = undefined, O extends KilnSchema | undefined = undefined> {
  name: string;
  /** A human-readable name for clients' UIs. */
  title?: string;
  description?: string;
  /** JSON Schema (root `type: "object"`) or a Standard Schema of the arguments: the host checks every call
   *  against the JSON Schema; a Standard Schema's own validate then runs in the guest, so `args` is its output. */
  inputSchema?: I;
  /** JSON Schema (root `type: "object"`) or Standard Schema of the result: listed in tools/list; a result that
   *  does not match fails. */
  outputSchema?: O;
  /** MCP hints; kiln derives them from the capabilities, and these may only make them more cautious. */
  annotations?: { readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean; openWorldHint?: boolean };
  exposeAsTool?: boolean;
  timeoutMs?: number;
  /** CPU time a call may spend running JavaScript (waiting for I/O or timers costs none); the operator's
   *  [limits] cpuMs may be lower. Past it the call fails with a CpuLimitError. */
  cpuMs?: number;
  /** A heap limit for this file's guest (shared by its tools: the lowest declared, or the operator's if lower). */
  memoryLimitBytes?: number;
  allow?: KilnAllow;
  handler?: KilnHandler<KilnInfer<I>, KilnResult<O>>;
}

interface KilnProcessStatus {
  running: boolean;
  pid: number;
  exitCode: number | null;
  uptimeMs: number;
  stdout: string;
  stderr: string;
}

interface KilnCommands {
  run<T = any>(name: string, vars?: Record<string, string | number | boolean>): Promise<T>;
  start(name: string): Promise<{ name: string; pid: number }>;
  status(name: string): Promise<KilnProcessStatus>;
  stop(name: string): Promise<null>;
}

interface KilnApiResponse {
  status(): number;
  statusText(): string;
  ok(): boolean;
  url(): string;
  headers(): Record<string, string>;
  headersArray(): { name: string; value: string }[];
  body(): Promise<Uint8Array>;
  text(): Promise<string>;
  json<T = any>(): Promise<T>;
  dispose(): Promise<void>;
}

interface KilnRequestOptions {
  method?: string;
  headers?: Record<string, string>;
  data?: unknown;
  form?: Record<string, string>;
  multipart?: Record<string, unknown> | FormData;
  params?: Record<string, string> | URLSearchParams | string;
  timeout?: number;
  failOnStatusCode?: boolean;
  maxRedirects?: number;
}

interface KilnRequest {
  fetch(url: string | Request, options?: KilnRequestOptions): Promise<KilnApiResponse>;
  get(url: string, options?: KilnRequestOptions): Promise<KilnApiResponse>;
  post(url: string, options?: KilnRequestOptions): Promise<KilnApiResponse>;
  put(url: string, options?: KilnRequestOptions): Promise<KilnApiResponse>;
  patch(url: string, options?: KilnRequestOptions): Promise<KilnApiResponse>;
  delete(url: string, options?: KilnRequestOptions): Promise<KilnApiResponse>;
  head(url: string, options?: KilnRequestOptions): Promise<KilnApiResponse>;
}

/** The type tests a stat and a directory entry share. */
interface KilnEntryType {
  isFile(): boolean;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
  isFIFO(): boolean;
  isSocket(): boolean;
  isBlockDevice(): boolean;
  isCharacterDevice(): boolean;
}

/** What ctx.fs.stat gives (no device, inode or owner: those describe the host). */
interface KilnStats extends KilnEntryType {
  size: number;
  mode: number;
  nlink: number;
  atimeMs: number;
  mtimeMs: number;
  ctimeMs: number;
  birthtimeMs: number;
  atime: Date;
  mtime: Date;
  ctime: Date;
  birthtime: Date;
  /** Always false: a symlink at the end of a path is refused, not followed. */
  isSymbolicLink(): boolean;
}

interface KilnDirent extends KilnEntryType {
  name: string;
  parentPath: string;
  path: string;
}

type KilnUtf8 = 'utf8' | 'utf-8';
type KilnData = string | ArrayBuffer | ArrayBufferView;

/** The workspace's files (allow.fs), shaped like node:fs/promises. Paths are relative to the workspace root.
 *  Failures carry Node's `code` (ENOENT, EEXIST, ENOTDIR, EISDIR, ...); a path allow.fs does not cover rejects
 *  with a PermissionError (code EACCES) that names the setting to add. */
interface KilnFs {
  readFile(path: string, options?: null | { encoding?: null }): Promise<Uint8Array>;
  readFile(path: string, options: KilnUtf8 | { encoding: KilnUtf8 }): Promise<string>;
  writeFile(path: string, data: KilnData, options?: KilnUtf8 | { encoding?: KilnUtf8 }): Promise<void>;
  appendFile(path: string, data: KilnData, options?: KilnUtf8 | { encoding?: KilnUtf8 }): Promise<void>;
  readdir(path: string, options?: { withFileTypes?: false }): Promise<string[]>;
  readdir(path: string, options: { withFileTypes: true }): Promise<KilnDirent[]>;
  stat(path: string): Promise<KilnStats>;
  /** recursive: resolves to the first directory made (relative to the root), or undefined if none was. */
  mkdir(path: string, options?: { recursive?: boolean }): Promise<string | undefined>;
  rm(path: string, options?: { recursive?: boolean; force?: boolean }): Promise<void>;
  rename(oldPath: string, newPath: string): Promise<void>;
}

interface KilnContext<A = any> {
  /** The caller's arguments, already validated against inputSchema (a Standard Schema's: its validate's output). */
  args: A;
  commands: KilnCommands;
  request: KilnRequest;
  /** The workspace's files, as allow.fs grants them (every call of a tool without allow.fs is refused). */
  fs: KilnFs;
  /** The session's browser page, when the tool declares allow.browser; undefined otherwise. */
  page: KilnPage | undefined;
  context: KilnBrowserContext | undefined;
  /** Report progress to the caller: MCP `notifications/progress` when the client asked for it (a progressToken),
   *  at most one per 100 ms (the newest wins); `progress` must grow. Without a listener it does nothing. */
  progress(progress: number, total?: number, message?: string): void;
  /** Aborts, with an AbortError DOMException, when the caller cancels this call (MCP notifications/cancelled, or
   *  the client going away). Pass it on (`fetch(url, { signal })`) or listen to it and stop: a handler still
   *  running 200 ms after the cancel is stopped and its guest's globals reset. */
  readonly signal: AbortSignal;
}

type KilnHandler<A = any, R = unknown> = (ctx: KilnContext<A>) => R;

declare global {
  /** What a failed `commands.run` rejects with (name "CommandError"). exitCode, signal, stdout and stderr are
   *  set when the command ran and ended badly (exitCode null when a signal killed it). */
  interface CommandError extends Error {
    name: 'CommandError';
    exitCode?: number | null;
    signal?: string | null;
    stdout?: string;
    stderr?: string;
  }

  /** Register a tool. `args` takes its type from inputSchema and the handler's result is checked against
   *  outputSchema (KilnInfer); an inline JSON Schema literal is typed as written (a `const` type parameter). */
  function defineTool<const I extends KilnSchema | undefined = undefined, const O extends KilnSchema | undefined = undefined>(
    manifest: KilnToolManifest<I, O> & { handler: KilnHandler<KilnInfer<I>, KilnResult<O>> }): void;
  function defineTool<const I extends KilnSchema | undefined = undefined, const O extends KilnSchema | undefined = undefined>(
    manifest: KilnToolManifest<I, O>, handler: KilnHandler<KilnInfer<I>, KilnResult<O>>): void;

  /** Call any loaded tool; it runs with its own manifest and timeout. */
  const plugins: Record<string, <T = any>(args?: unknown) => Promise<T>>;

  /** The session's small string store; it outlives resets of the guest's globals. */
  const vars: {
    get(key: string): string | undefined;
    set(key: string, value: string): void;
    has(key: string): boolean;
    delete(key: string): boolean;
    keys(): string[];
  };

  /** One part of `kiln.content`: text, image bytes (PNG, JPEG, GIF, WebP), or a link to a resource. */
  type KilnContentPart =
    | string
    | Uint8Array
    | ArrayBuffer
    | { type: 'image'; data: Uint8Array | ArrayBuffer; mimeType?: string }
    | { type: 'resource_link'; uri: string; name: string; title?: string; description?: string; mimeType?: string };
  interface KilnMarker {
    readonly host: 'mcp' | 'bdd' | 'script';
    readonly version: string;
    /** A result of several MCP content blocks: `return kiln.content(['Here it is:', pngBytes])`. */
    content(parts: KilnContentPart[]): unknown;
  }
  const kiln: KilnMarker;
  /** The same object as `kiln`, for extensions written to the ferridriver contract. */
  const ferridriver: KilnMarker;

  /** BDD step definitions (kiln bdd, docs/bdd.md): a Cucumber expression or a RegExp, an optional options bag,
   *  and the step, called with the World as `this` and the matched values (then a DataTable or doc string). */
  function Given(pattern: string | RegExp, step: KilnStep): void;
  function Given(pattern: string | RegExp, options: { timeout?: number }, step: KilnStep): void;
  function When(pattern: string | RegExp, step: KilnStep): void;
  function When(pattern: string | RegExp, options: { timeout?: number }, step: KilnStep): void;
  function Then(pattern: string | RegExp, step: KilnStep): void;
  function Then(pattern: string | RegExp, options: { timeout?: number }, step: KilnStep): void;
  function And(pattern: string | RegExp, step: KilnStep): void;
  function And(pattern: string | RegExp, options: { timeout?: number }, step: KilnStep): void;
  function But(pattern: string | RegExp, step: KilnStep): void;
  function But(pattern: string | RegExp, options: { timeout?: number }, step: KilnStep): void;
  function defineStep(pattern: string | RegExp, step: KilnStep): void;
  function defineStep(pattern: string | RegExp, options: { timeout?: number }, step: KilnStep): void;
  /** Scenario hooks: optionally a tag expression ("@a and not @b") or { tags, name, timeout }. */
  function Before(hook: KilnHook): void;
  function Before(tagsOrOptions: string | KilnHookOptions, hook: KilnHook): void;
  function After(hook: KilnHook): void;
  function After(tagsOrOptions: string | KilnHookOptions, hook: KilnHook): void;
  function BeforeStep(hook: KilnHook): void;
  function BeforeStep(tagsOrOptions: string | KilnHookOptions, hook: KilnHook): void;
  function AfterStep(hook: KilnHook): void;
  function AfterStep(tagsOrOptions: string | KilnHookOptions, hook: KilnHook): void;
  /** Once per worker's guest (again after a guest was replaced, for instance after a step timed out). */
  function BeforeAll(hook: () => unknown): void;
  function BeforeAll(options: { name?: string; timeout?: number }, hook: () => unknown): void;
  function AfterAll(hook: () => unknown): void;
  function AfterAll(options: { name?: string; timeout?: number }, hook: () => unknown): void;
  function defineParameterType(options: { name: string; regexp: RegExp | string | readonly (RegExp | string)[]; transformer?: (...match: string[]) => unknown; [key: string]: unknown }): void;
  function setDefaultTimeout(milliseconds: number): void;
  function setDefinitionFunctionWrapper(wrapper: (fn: Function) => Function): void;
  function setWorldConstructor(world: unknown): void;
  function setParallelCanAssign(fn: unknown): void;

  /** QuickJS's own error class (for example "InternalError: stack overflow"). */
  class InternalError extends Error {}
}

/** `this` in a step or hook: rebuilt per scenario. page, context and request follow the capabilities of the file
 *  the running step comes from (an extension's allow, a step file's grant). */
interface KilnWorld {
  readonly page?: KilnPage;
  readonly context?: KilnBrowserContext;
  readonly request?: KilnRequest;
  /** --world-parameters */
  parameters: any;
  /** Attach to the running step's report: text, JSON, bytes (image/png...), or base64 with "base64:<type>". */
  attach(data: unknown, mediaType?: string | { mediaType: string; fileName?: string }): void;
  log(text: unknown): void;
  /** Skip the rest of the scenario (the step is reported skipped). */
  skip(): never;
  [key: string]: any;
}
type KilnStep = (this: KilnWorld, ...args: any[]) => unknown;
interface KilnHookOptions {
  tags?: string;
  name?: string;
  timeout?: number;
}
type KilnHook = (this: KilnWorld, scenario: { pickle: { id: string; name: string; uri: string; tags: string[] }; result?: { status: string } }) => unknown;

/** A chain of locator steps, replayed by the host on every call (allow.browser). */
interface KilnLocator {
  locator(selector: string): KilnLocator;
  getByRole(role: string, options?: { name?: string; exact?: boolean }): KilnLocator;
  getByText(text: string, options?: { exact?: boolean }): KilnLocator;
  getByLabel(text: string, options?: { exact?: boolean }): KilnLocator;
  getByTestId(id: string): KilnLocator;
  getByPlaceholder(text: string, options?: { exact?: boolean }): KilnLocator;
  nth(index: number): KilnLocator;
  first(): KilnLocator;
  last(): KilnLocator;
  all(): Promise<KilnLocator[]>;
  click(options?: object): Promise<void>;
  dblclick(options?: object): Promise<void>;
  fill(value: string, options?: object): Promise<void>;
  type(text: string, options?: object): Promise<void>;
  press(key: string, options?: object): Promise<void>;
  check(options?: object): Promise<void>;
  uncheck(options?: object): Promise<void>;
  selectOption(values: string | string[], options?: object): Promise<string[]>;
  hover(options?: object): Promise<void>;
  focus(options?: object): Promise<void>;
  textContent(options?: object): Promise<string | null>;
  innerText(options?: object): Promise<string>;
  innerHTML(options?: object): Promise<string>;
  getAttribute(name: string, options?: object): Promise<string | null>;
  inputValue(options?: object): Promise<string>;
  isVisible(options?: object): Promise<boolean>;
  isChecked(options?: object): Promise<boolean>;
  count(): Promise<number>;
  allTextContents(): Promise<string[]>;
  waitFor(options?: { state?: 'attached' | 'detached' | 'visible' | 'hidden'; timeout?: number }): Promise<void>;
}

/** The session's page (allow.browser): every method is one host call, checked against the tool's manifest. */
interface KilnPage extends Omit<KilnLocator, 'nth' | 'first' | 'last' | 'all' | 'count' | 'allTextContents' | 'waitFor' | 'click' | 'dblclick' | 'fill' | 'type' | 'press' | 'check' | 'uncheck' | 'selectOption' | 'hover' | 'focus' | 'textContent' | 'innerText' | 'innerHTML' | 'getAttribute' | 'inputValue' | 'isVisible' | 'isChecked'> {
  goto(url: string, options?: { timeout?: number; waitUntil?: 'load' | 'domcontentloaded' | 'networkidle' | 'commit' }): Promise<{ status: number; url: string } | null>;
  url(): Promise<string>;
  title(): Promise<string>;
  content(): Promise<string>;
  setContent(html: string, options?: object): Promise<void>;
  click(selector: string, options?: object): Promise<void>;
  dblclick(selector: string, options?: object): Promise<void>;
  fill(selector: string, value: string, options?: object): Promise<void>;
  type(selector: string, text: string, options?: object): Promise<void>;
  press(selector: string, key: string, options?: object): Promise<void>;
  check(selector: string, options?: object): Promise<void>;
  uncheck(selector: string, options?: object): Promise<void>;
  selectOption(selector: string, values: string | string[], options?: object): Promise<string[]>;
  hover(selector: string, options?: object): Promise<void>;
  focus(selector: string, options?: object): Promise<void>;
  waitForSelector(selector: string, options?: object): Promise<null>;
  waitForURL(url: string, options?: object): Promise<void>;
  waitForLoadState(state?: 'load' | 'domcontentloaded' | 'networkidle', options?: object): Promise<void>;
  waitForTimeout(ms: number): Promise<void>;
  textContent(selector: string, options?: object): Promise<string | null>;
  innerText(selector: string, options?: object): Promise<string>;
  innerHTML(selector: string, options?: object): Promise<string>;
  getAttribute(selector: string, name: string, options?: object): Promise<string | null>;
  inputValue(selector: string, options?: object): Promise<string>;
  isVisible(selector: string, options?: object): Promise<boolean>;
  isChecked(selector: string, options?: object): Promise<boolean>;
  /** A function runs in the page with one JSON-serialisable argument (its source is sent); a string is evaluated. */
  evaluate<R = unknown, A = unknown>(fn: string | ((arg: A) => R | Promise<R>), arg?: A): Promise<R>;
  screenshot(options?: { fullPage?: boolean; type?: 'png' | 'jpeg'; quality?: number; omitBackground?: boolean }): Promise<Uint8Array>;
  setViewportSize(size: { width: number; height: number }): Promise<void>;
  /** What the page logged (console.*), newest 200, since it opened. */
  consoleMessages(): Promise<{ type: string; text: string }[]>;
  /** The dialogs (alert, confirm, prompt, beforeunload) it opened, newest 200; each was dismissed at once. */
  dialogs(): Promise<{ type: string; message: string }[]>;
  /** Heard when the page's next call answers: what it logged and asked since its previous call. */
  on(event: 'console', listener: (message: { type(): string; text(): string }) => void): KilnPage;
  on(event: 'dialog', listener: (dialog: { type(): string; message(): string; accept(): Promise<void>; dismiss(): Promise<void> }) => void): KilnPage;
  off(event: 'console' | 'dialog', listener: (...args: any[]) => void): KilnPage;
  goBack(options?: object): Promise<unknown>;
  reload(options?: object): Promise<unknown>;
}

interface KilnBrowserContext {
  cookies(urls?: string[]): Promise<{ name: string; value: string; domain: string; path: string; expires: number; httpOnly: boolean; secure: boolean; sameSite: string }[]>;
  addCookies(cookies: { name: string; value: string; url?: string; domain?: string; path?: string }[]): Promise<void>;
  clearCookies(): Promise<void>;
  newPage(): Promise<KilnPage>;
  pages(): Promise<KilnPage[]>;
}
