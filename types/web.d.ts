// The guest's web platform, as kiln implements it (guest/web/): exactly these globals exist in a guest, so
// code that type-checks against them (with `lib` ES2024 and no DOM) finds them at run time. See
// docs/extensions.md for what each one does and where it differs from Node.
export {};

type BufferSource = ArrayBuffer | ArrayBufferView;
type HeadersInit = Headers | [string, string][] | Record<string, string>;
type BodyInit = string | BufferSource | Blob | FormData | URLSearchParams | ReadableStream<Uint8Array> | Record<string, unknown>;
type TypedIntegerArray = Int8Array | Uint8Array | Uint8ClampedArray | Int16Array | Uint16Array | Int32Array | Uint32Array | BigInt64Array | BigUint64Array;

declare global {
  // ---- console, timers, misc ----
  interface KilnConsole {
    log(...data: unknown[]): void;
    info(...data: unknown[]): void;
    warn(...data: unknown[]): void;
    error(...data: unknown[]): void;
    debug(...data: unknown[]): void;
    trace(...data: unknown[]): void;
    dir(item: unknown, options?: { depth?: number }): void;
    table(data: unknown): void;
    assert(condition?: unknown, ...data: unknown[]): void;
    count(label?: string): void;
    countReset(label?: string): void;
    time(label?: string): void;
    timeLog(label?: string, ...data: unknown[]): void;
    timeEnd(label?: string): void;
    group(...data: unknown[]): void;
    groupCollapsed(...data: unknown[]): void;
    groupEnd(): void;
  }
  var console: KilnConsole;
  /** What setImmediate returns, as in Node. ref and unref change only hasRef(): a guest's timer keeps nothing
   *  alive past the call that set it. */
  interface KilnImmediate {
    ref(): this;
    unref(): this;
    hasRef(): boolean;
    [Symbol.dispose](): void;
  }
  /** What setTimeout and setInterval return, as in Node: clearTimeout takes it, or its id (`+timeout`). */
  interface KilnTimeout extends KilnImmediate {
    /** Start again with the same delay, from now (after it fired, too). */
    refresh(): this;
    close(): this;
    [Symbol.toPrimitive](): number;
  }
  function setTimeout<A extends unknown[]>(handler: (...args: A) => void, timeout?: number, ...args: A): KilnTimeout;
  function setInterval<A extends unknown[]>(handler: (...args: A) => void, timeout?: number, ...args: A): KilnTimeout;
  function setImmediate<A extends unknown[]>(handler: (...args: A) => void, ...args: A): KilnImmediate;
  function clearTimeout(timeout: KilnTimeout | number | string | undefined | null): void;
  function clearInterval(timeout: KilnTimeout | number | string | undefined | null): void;
  function clearImmediate(immediate: KilnImmediate | undefined | null): void;
  function queueMicrotask(callback: () => void): void;
  function structuredClone<T>(value: T, options?: { transfer?: unknown[] }): T;
  function atob(data: string): string;
  function btoa(data: string): string;
  var performance: { now(): number; readonly timeOrigin: number };
  /** The global object itself, as in a worker (browser builds reach crypto, fetch and the rest through it). */
  var self: typeof globalThis;
  /** The global object itself, as Node names it (`global === globalThis`). */
  var global: typeof globalThis;
  /** Node's Buffer, the `buffer` built-in's (npm's `buffer`): not a global of the engine, but imported by the
   *  bundler into each module that names it, as docs/extensions.md ("Node builtins") says. */
  var Buffer: typeof import('buffer').Buffer;
  type Buffer = import('buffer').Buffer;

  interface KilnProcess {
    readonly platform: string;
    readonly arch: 'wasm32';
    readonly version: string;
    readonly versions: Readonly<Record<string, string>>;
    readonly release: { readonly name: string };
    readonly argv: readonly string[];
    readonly pid: number;
    /** Only the names the operator lists in [scripting] allowEnv that are set; frozen. */
    readonly env: Readonly<Record<string, string | undefined>>;
    nextTick<A extends unknown[]>(callback: (...args: A) => void, ...args: A): void;
    hrtime: { (previous?: [number, number]): [number, number]; bigint(): bigint };
    readonly stdout: { write(chunk: string | Uint8Array): boolean; readonly isTTY: false };
    readonly stderr: { write(chunk: string | Uint8Array): boolean; readonly isTTY: false };
    cwd(): string;
    memoryUsage(): { rss: number; heapTotal: number; heapUsed: number; external: number; arrayBuffers: number };
    /** Throws: an extension cannot end the host. */
    exit(code?: number): never;
  }
  var process: KilnProcess;

  // ---- events ----
  class DOMException extends Error {
    constructor(message?: string, name?: string);
    readonly code: number;
    static readonly ABORT_ERR: number;
    static readonly DATA_CLONE_ERR: number;
    static readonly NOT_SUPPORTED_ERR: number;
    static readonly TIMEOUT_ERR: number;
  }
  interface EventInit { bubbles?: boolean; cancelable?: boolean; composed?: boolean }
  class Event {
    constructor(type: string, init?: EventInit);
    readonly type: string;
    readonly bubbles: boolean;
    readonly cancelable: boolean;
    readonly composed: boolean;
    readonly target: EventTarget | null;
    readonly currentTarget: EventTarget | null;
    readonly defaultPrevented: boolean;
    readonly eventPhase: number;
    readonly isTrusted: boolean;
    readonly timeStamp: number;
    cancelBubble: boolean;
    composedPath(): EventTarget[];
    preventDefault(): void;
    stopPropagation(): void;
    stopImmediatePropagation(): void;
    static readonly NONE: 0;
    static readonly CAPTURING_PHASE: 1;
    static readonly AT_TARGET: 2;
    static readonly BUBBLING_PHASE: 3;
  }
  class CustomEvent<T = unknown> extends Event {
    constructor(type: string, init?: EventInit & { detail?: T });
    readonly detail: T;
  }
  type EventListenerOrObject = ((event: Event) => void) | { handleEvent(event: Event): void };
  interface AddEventListenerOptions { once?: boolean; capture?: boolean; passive?: boolean; signal?: AbortSignal }
  class EventTarget {
    constructor();
    addEventListener(type: string, listener: EventListenerOrObject | null, options?: boolean | AddEventListenerOptions): void;
    removeEventListener(type: string, listener: EventListenerOrObject | null, options?: boolean | { capture?: boolean }): void;
    dispatchEvent(event: Event): boolean;
  }

  // ---- abort ----
  class AbortSignal extends EventTarget {
    private constructor();
    readonly aborted: boolean;
    readonly reason: any;
    onabort: ((event: Event) => void) | null;
    throwIfAborted(): void;
    static abort(reason?: unknown): AbortSignal;
    static timeout(milliseconds: number): AbortSignal;
    static any(signals: Iterable<AbortSignal>): AbortSignal;
  }
  class AbortController {
    constructor();
    readonly signal: AbortSignal;
    abort(reason?: unknown): void;
  }

  // ---- encoding ----
  class TextEncoder {
    constructor();
    readonly encoding: 'utf-8';
    encode(input?: string): Uint8Array;
    encodeInto(source: string, destination: Uint8Array): { read: number; written: number };
  }
  class TextDecoder {
    constructor(label?: string, options?: { fatal?: boolean; ignoreBOM?: boolean });
    readonly encoding: string;
    readonly fatal: boolean;
    readonly ignoreBOM: boolean;
    decode(input?: BufferSource, options?: { stream?: boolean }): string;
  }
  class TextEncoderStream extends TransformStream<string, Uint8Array> {
    constructor();
    readonly encoding: 'utf-8';
  }
  class TextDecoderStream extends TransformStream<BufferSource, string> {
    constructor(label?: string, options?: { fatal?: boolean; ignoreBOM?: boolean });
    readonly encoding: string;
    readonly fatal: boolean;
    readonly ignoreBOM: boolean;
  }

  // ---- URL ----
  class URL {
    constructor(url: string | URL, base?: string | URL);
    static canParse(url: string | URL, base?: string | URL): boolean;
    href: string;
    readonly origin: string;
    protocol: string;
    username: string;
    password: string;
    host: string;
    hostname: string;
    port: string;
    pathname: string;
    search: string;
    readonly searchParams: URLSearchParams;
    hash: string;
    toString(): string;
    toJSON(): string;
  }
  class URLSearchParams {
    constructor(init?: string | URLSearchParams | Iterable<[string, string]> | Record<string, string>);
    readonly size: number;
    append(name: string, value: string): void;
    delete(name: string, value?: string): void;
    get(name: string): string | null;
    getAll(name: string): string[];
    has(name: string, value?: string): boolean;
    set(name: string, value: string): void;
    sort(): void;
    forEach(callback: (value: string, key: string, parent: URLSearchParams) => void, thisArg?: unknown): void;
    keys(): IterableIterator<string>;
    values(): IterableIterator<string>;
    entries(): IterableIterator<[string, string]>;
    [Symbol.iterator](): IterableIterator<[string, string]>;
    toString(): string;
  }

  // ---- streams ----
  interface ReadableStreamReadResult<R> { done: boolean; value: R | undefined }
  interface ReadableStreamDefaultReader<R = any> {
    read(): Promise<ReadableStreamReadResult<R>>;
    readonly closed: Promise<void>;
    releaseLock(): void;
    cancel(reason?: unknown): Promise<void>;
  }
  interface ReadableStreamController<R = any> {
    enqueue(chunk: R): void;
    close(): void;
    error(reason?: unknown): void;
    readonly desiredSize: number | null;
  }
  interface UnderlyingSource<R = any> {
    start?(controller: ReadableStreamController<R>): unknown;
    pull?(controller: ReadableStreamController<R>): unknown;
    cancel?(reason?: unknown): unknown;
  }
  interface StreamPipeOptions { preventClose?: boolean; preventAbort?: boolean; preventCancel?: boolean; signal?: AbortSignal }
  interface QueuingStrategy<T = any> { highWaterMark?: number; size?(chunk: T): number }
  class CountQueuingStrategy implements QueuingStrategy {
    constructor(init: { highWaterMark: number });
    readonly highWaterMark: number;
    readonly size: (chunk: unknown) => 1;
  }
  class ByteLengthQueuingStrategy implements QueuingStrategy<ArrayBufferView> {
    constructor(init: { highWaterMark: number });
    readonly highWaterMark: number;
    readonly size: (chunk: ArrayBufferView) => number;
  }
  class ReadableStream<R = any> {
    constructor(source?: UnderlyingSource<R>, strategy?: QueuingStrategy<R>);
    static from<R>(iterable: Iterable<R | PromiseLike<R>> | AsyncIterable<R>): ReadableStream<R>;
    readonly locked: boolean;
    getReader(): ReadableStreamDefaultReader<R>;
    cancel(reason?: unknown): Promise<void>;
    tee(): [ReadableStream<R>, ReadableStream<R>];
    pipeTo(destination: WritableStream<R>, options?: StreamPipeOptions): Promise<void>;
    pipeThrough<T>(transform: { writable: WritableStream<R>; readable: ReadableStream<T> }, options?: StreamPipeOptions): ReadableStream<T>;
    [Symbol.asyncIterator](): AsyncIterableIterator<R>;
  }
  interface WritableStreamDefaultWriter<W = any> {
    readonly desiredSize: number | null;
    readonly ready: Promise<void>;
    readonly closed: Promise<void>;
    write(chunk: W): Promise<void>;
    close(): Promise<void>;
    abort(reason?: unknown): Promise<void>;
    releaseLock(): void;
  }
  interface UnderlyingSink<W = any> {
    start?(controller: { error(reason?: unknown): void; readonly signal: AbortSignal }): unknown;
    write?(chunk: W, controller: { error(reason?: unknown): void }): unknown;
    close?(): unknown;
    abort?(reason?: unknown): unknown;
  }
  class WritableStream<W = any> {
    constructor(sink?: UnderlyingSink<W>, strategy?: QueuingStrategy<W>);
    readonly locked: boolean;
    getWriter(): WritableStreamDefaultWriter<W>;
    abort(reason?: unknown): Promise<void>;
    close(): Promise<void>;
  }
  interface TransformStreamController<O = any> {
    enqueue(chunk: O): void;
    error(reason?: unknown): void;
    terminate(): void;
    readonly desiredSize: number | null;
  }
  interface Transformer<I = any, O = any> {
    start?(controller: TransformStreamController<O>): unknown;
    transform?(chunk: I, controller: TransformStreamController<O>): unknown;
    flush?(controller: TransformStreamController<O>): unknown;
  }
  class TransformStream<I = any, O = any> {
    constructor(transformer?: Transformer<I, O>);
    readonly readable: ReadableStream<O>;
    readonly writable: WritableStream<I>;
  }

  // ---- Blob, File, FormData ----
  class Blob {
    constructor(parts?: (string | BufferSource | Blob)[], options?: { type?: string });
    readonly size: number;
    readonly type: string;
    arrayBuffer(): Promise<ArrayBuffer>;
    bytes(): Promise<Uint8Array>;
    text(): Promise<string>;
    slice(start?: number, end?: number, contentType?: string): Blob;
    stream(): ReadableStream<Uint8Array>;
  }
  class File extends Blob {
    constructor(parts: (string | BufferSource | Blob)[], name: string, options?: { type?: string; lastModified?: number });
    readonly name: string;
    readonly lastModified: number;
  }
  type FormDataValue = string | File;
  class FormData {
    constructor();
    append(name: string, value: string | Blob, filename?: string): void;
    set(name: string, value: string | Blob, filename?: string): void;
    get(name: string): FormDataValue | null;
    getAll(name: string): FormDataValue[];
    has(name: string): boolean;
    delete(name: string): void;
    forEach(callback: (value: FormDataValue, key: string, parent: FormData) => void, thisArg?: unknown): void;
    keys(): IterableIterator<string>;
    values(): IterableIterator<FormDataValue>;
    entries(): IterableIterator<[string, FormDataValue]>;
    [Symbol.iterator](): IterableIterator<[string, FormDataValue]>;
  }

  // ---- fetch ----
  class Headers {
    constructor(init?: HeadersInit);
    append(name: string, value: string): void;
    delete(name: string): void;
    get(name: string): string | null;
    getSetCookie(): string[];
    has(name: string): boolean;
    set(name: string, value: string): void;
    forEach(callback: (value: string, key: string, parent: Headers) => void, thisArg?: unknown): void;
    keys(): IterableIterator<string>;
    values(): IterableIterator<string>;
    entries(): IterableIterator<[string, string]>;
    [Symbol.iterator](): IterableIterator<[string, string]>;
  }
  interface Body {
    readonly body: ReadableStream<Uint8Array> | null;
    readonly bodyUsed: boolean;
    arrayBuffer(): Promise<ArrayBuffer>;
    bytes(): Promise<Uint8Array>;
    blob(): Promise<Blob>;
    json(): Promise<any>;
    text(): Promise<string>;
  }
  interface RequestInit {
    method?: string;
    headers?: HeadersInit;
    /** A plain object is sent as JSON. */
    body?: BodyInit | null;
    redirect?: 'follow' | 'error' | 'manual';
    credentials?: 'omit' | 'same-origin' | 'include';
    signal?: AbortSignal | null;
  }
  class Request implements Body {
    constructor(input: string | URL | Request, init?: RequestInit);
    readonly url: string;
    readonly method: string;
    readonly headers: Headers;
    readonly redirect: 'follow' | 'error' | 'manual';
    readonly credentials: 'omit' | 'same-origin' | 'include';
    readonly signal: AbortSignal;
    readonly body: ReadableStream<Uint8Array> | null;
    readonly bodyUsed: boolean;
    arrayBuffer(): Promise<ArrayBuffer>;
    bytes(): Promise<Uint8Array>;
    blob(): Promise<Blob>;
    json(): Promise<any>;
    text(): Promise<string>;
    clone(): Request;
  }
  interface ResponseInit { status?: number; statusText?: string; headers?: HeadersInit }
  class Response implements Body {
    constructor(body?: BodyInit | null, init?: ResponseInit);
    static json(data: unknown, init?: ResponseInit): Response;
    static error(): Response;
    static redirect(url: string | URL, status?: number): Response;
    readonly status: number;
    readonly ok: boolean;
    readonly statusText: string;
    readonly headers: Headers;
    readonly url: string;
    readonly redirected: boolean;
    readonly type: 'basic' | 'default' | 'error';
    readonly body: ReadableStream<Uint8Array> | null;
    readonly bodyUsed: boolean;
    arrayBuffer(): Promise<ArrayBuffer>;
    bytes(): Promise<Uint8Array>;
    blob(): Promise<Blob>;
    json(): Promise<any>;
    text(): Promise<string>;
    clone(): Response;
  }
  /** WHATWG fetch, checked against the tool's allow.net on the host; data: URLs are answered in the guest. */
  function fetch(input: string | URL | Request, init?: RequestInit): Promise<Response>;

  // ---- crypto ----
  type AlgorithmIdentifier = string | { name: string };
  interface HmacImportParams { name: 'HMAC' | string; hash: AlgorithmIdentifier; length?: number }
  interface JsonWebKey { kty?: string; k?: string; alg?: string; ext?: boolean; key_ops?: string[] }
  class CryptoKey {
    private constructor();
    readonly type: 'secret';
    readonly extractable: boolean;
    readonly algorithm: { name: string; hash: { name: string }; length: number };
    readonly usages: ('sign' | 'verify')[];
  }
  class SubtleCrypto {
    private constructor();
    digest(algorithm: AlgorithmIdentifier, data: BufferSource): Promise<ArrayBuffer>;
    importKey(format: 'raw', keyData: BufferSource, algorithm: HmacImportParams, extractable: boolean, usages: ('sign' | 'verify')[]): Promise<CryptoKey>;
    importKey(format: 'jwk', keyData: JsonWebKey, algorithm: HmacImportParams, extractable: boolean, usages: ('sign' | 'verify')[]): Promise<CryptoKey>;
    exportKey(format: 'raw', key: CryptoKey): Promise<ArrayBuffer>;
    exportKey(format: 'jwk', key: CryptoKey): Promise<JsonWebKey>;
    generateKey(algorithm: HmacImportParams, extractable: boolean, usages: ('sign' | 'verify')[]): Promise<CryptoKey>;
    sign(algorithm: AlgorithmIdentifier, key: CryptoKey, data: BufferSource): Promise<ArrayBuffer>;
    verify(algorithm: AlgorithmIdentifier, key: CryptoKey, signature: BufferSource, data: BufferSource): Promise<boolean>;
  }
  class Crypto {
    private constructor();
    readonly subtle: SubtleCrypto;
    getRandomValues<T extends TypedIntegerArray>(array: T): T;
    randomUUID(): `${string}-${string}-${string}-${string}-${string}`;
  }
  var crypto: Crypto;
}
