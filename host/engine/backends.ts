// The runtimes that can run the engine component, and which one a process asked for. Deciding happens here;
// engine/engine.ts loads what was decided (and falls back to V8 only when nothing was asked for).
import { EngineError } from '../errors.js';

/** The runtimes that can run the engine. */
export const BACKENDS = ['wasmtime', 'v8'] as const;
export type Backend = (typeof BACKENDS)[number];

/** The backend an engine runs on, and why when it is not the one asked for. */
export interface BackendChoice {
  backend: Backend;
  /** Set when wasmtime was asked for (or is the default) but cannot run here. */
  fallback?: string;
}

/** The backend asked for: `KILN_ENGINE` when set, else the configuration's (`[engine] backend`); none:
 *  wasmtime where it can run, else V8. One asked for that cannot run is an error, never a silent swap. */
export function requestedBackend(configured?: Backend): Backend | undefined {
  const env = process.env.KILN_ENGINE;
  if (env !== undefined && env !== '') {
    if (!(BACKENDS as readonly string[]).includes(env)) throw new EngineError(`KILN_ENGINE=${JSON.stringify(env)} is not an engine backend: use one of ${BACKENDS.join(', ')}`);
    return env as Backend;
  }
  return configured;
}
