// Types for kiln extensions: exactly the globals a guest has (docs/extensions.md) — the extension API here,
// the web platform in web.d.ts. Extend types/tsconfig.json (ES2024, no DOM: what type-checks there runs in a
// guest), or reference this file with /// <reference path="…/kiln.d.ts" />.
/// <reference path="./web.d.ts" />
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
}

interface KilnToolManifest<A = any> {
  name: string;
  /** A human-readable name for clients' UIs. */
  title?: string;
  description?: string;
  inputSchema?: Record<string, unknown>;
  /** JSON Schema (root `type: "object"`) of the result: listed in tools/list; a result that does not match fails. */
  outputSchema?: Record<string, unknown>;
  /** MCP hints; kiln derives them from the capabilities, and these may only make them more cautious. */
  annotations?: { readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean; openWorldHint?: boolean };
  exposeAsTool?: boolean;
  timeoutMs?: number;
  allow?: KilnAllow;
  handler?: KilnHandler<A>;
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

interface KilnContext<A = any> {
  /** The caller's arguments, already validated against inputSchema. */
  args: A;
  commands: KilnCommands;
  request: KilnRequest;
  page: any | undefined;
  context: any | undefined;
  /** Report progress to the caller: MCP `notifications/progress` when the client asked for it (a progressToken),
   *  at most one per 100 ms (the newest wins); `progress` must grow. Without a listener it does nothing. */
  progress(progress: number, total?: number, message?: string): void;
  /** Aborts, with an AbortError DOMException, when the caller cancels this call (MCP notifications/cancelled, or
   *  the client going away). Pass it on (`fetch(url, { signal })`) or listen to it and stop: a handler still
   *  running 200 ms after the cancel is stopped and its guest's globals reset. */
  readonly signal: AbortSignal;
}

type KilnHandler<A = any> = (ctx: KilnContext<A>) => unknown;

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

  function defineTool<A = any>(manifest: KilnToolManifest<A> & { handler: KilnHandler<A> }): void;
  function defineTool<A = any>(manifest: KilnToolManifest<A>, handler: KilnHandler<A>): void;

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

  /** BDD registrations (recorded; served by the bdd host). */
  function Given(pattern: string | RegExp, ...rest: unknown[]): void;
  function When(pattern: string | RegExp, ...rest: unknown[]): void;
  function Then(pattern: string | RegExp, ...rest: unknown[]): void;
  function And(pattern: string | RegExp, ...rest: unknown[]): void;
  function But(pattern: string | RegExp, ...rest: unknown[]): void;
  function defineStep(pattern: string | RegExp, ...rest: unknown[]): void;
  function Before(...rest: unknown[]): void;
  function After(...rest: unknown[]): void;
  function BeforeAll(...rest: unknown[]): void;
  function AfterAll(...rest: unknown[]): void;
  function BeforeStep(...rest: unknown[]): void;
  function AfterStep(...rest: unknown[]): void;
  function defineParameterType(options: { name: string; regexp: RegExp | string | readonly (RegExp | string)[]; transformer?: (...match: string[]) => unknown; [key: string]: unknown }): void;
  function setDefaultTimeout(milliseconds: number): void;
  function setDefinitionFunctionWrapper(wrapper: (fn: Function) => Function): void;
  function setWorldConstructor(world: unknown): void;
  function setParallelCanAssign(fn: unknown): void;

  /** QuickJS's own error class (for example "InternalError: stack overflow"). */
  class InternalError extends Error {}
}
