// The operator's config file is watched for as long as `kiln mcp` runs: a saved change applies to the next call,
// no restart. A change is read whole (the same reader and messages as at start); a file that does not read keeps
// the previous settings in force and says why. What applies live: [policy], [grants], [commands], [scripting],
// [net] and [limits] (new guests: every guest is replaced once its current call ends, so that env and memory
// limits apply; a call in flight is never cut), [mcp] (but stateKeyFile), `extensions`
// and `exclude` (the registry reloads). A change that takes authority away applies to what runs too (a
// revocation): commands running under a command grant the new settings do not cover, or of an extension the new
// `extensions` no longer loads, are stopped, one-shot and persistent (capabilities/commands/commands.ts stillCovered
// decides), and an extension that lost browser or net hosts, or a secret, or is no longer loaded, has its browser
// pages closed (browser) or its requests in flight aborted (net hosts, secrets) (policy/grants.ts narrowedKinds). [sessions], [http], [browser], [audit] and [secrets.*] (their values
// leave kiln's environment at start) take a restart: kiln says so.
// When the tools a client sees change (names, schemas, annotations that follow from grants), clients are told
// with notifications/tools/list_changed.
import { existsSync, readFileSync, watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import { readConfig, type KilnConfig } from '../config/config.js';
import type { McpHost } from './host.js';
import { stillCovered } from '../capabilities/commands/commands.js';
import { narrowedKinds } from '../policy/authority.js';

const DEBOUNCE_MS = 200;

/** The config's sections that are read once, at start. */
const RESTART_SECTIONS = ['sessions', 'browser', 'audit', 'secrets'] as const;

export interface ConfigWatch {
  file: string;
  /** The paths named on the command line, loaded besides the config's `extensions`. */
  positionals: string[];
  /** The settings in force. */
  current: KilnConfig;
}

/** Watch `config`'s file; `reload` applies it now (SIGHUP), `stop` stops watching. */
export function watchConfig(host: McpHost, config: ConfigWatch, toolsChanged: () => void): { reload: () => void; stop: () => void } {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  // What is read only at start is compared with what the server started with: putting it back needs nothing.
  const started = config.current;
  let applied = JSON.stringify(config.current);
  const apply = () => {
    running = running.then(async () => {
      if (!existsSync(config.file)) return; // mid-save (removed, then renamed in): the next event reads it
      if (readFileSync(config.file, 'utf8').trim() === '') {
        // A truncated save (or an editor's first write) would drop every setting, grants and approvals included.
        host.notice('warning', `${config.file} is empty: not applied (the previous settings stay in force; restart kiln to run without a config)`);
        return;
      }
      let next: KilnConfig;
      try {
        next = readConfig(config.file);
      } catch (e) {
        host.notice('error', `${(e as Error).message}; the previous settings stay in force`);
        return;
      }
      if (JSON.stringify(next) === applied) {
        host.log.kiln(`${config.file} read again: nothing changed`); // the operator's log only: clients need not hear of it
        return;
      }
      applied = JSON.stringify(next);
      const before = JSON.stringify(host.allTools());
      const prev = config.current;
      const needRestart: string[] = RESTART_SECTIONS.filter((s) => JSON.stringify(started.policy[s]) !== JSON.stringify(next.policy[s])).map((s) => `[${s}]`);
      if (JSON.stringify(started.http) !== JSON.stringify(next.http)) needRestart.push('[http]');
      if (started.mcp.stateKeyFile !== next.mcp.stateKeyFile) needRestart.push('[mcp] stateKeyFile');
      if (started.engine.backend !== next.engine.backend) needRestart.push('[engine]');
      host.registry.applyPolicy(next.policy);
      host.settings = next.mcp; // pages, tool names, cache hints and tasks, from the next request on
      config.current = next;
      try {
        if (JSON.stringify([prev.extensions, prev.exclude]) !== JSON.stringify([next.extensions, next.exclude])) {
          await host.registry.reload([...config.positionals, ...next.extensions], next.exclude);
        }
      } catch (e) {
        host.notice('error', `reloading the extensions of ${config.file} failed, the previous tools keep serving: ${(e as Error)?.message ?? e}`);
      }
      host.sessions.retireGuests('the operator changed the config');
      const was = { ceiling: prev.policy.commands, grants: prev.policy.grants };
      const now = { ceiling: next.policy.commands, grants: next.policy.grants };
      const byFile = new Map(host.registry.extensions.map((e) => [e.file, e]));
      const stopped = host.sessions.revoke(
        (name, origin) => stillCovered(name, origin, was, now, byFile.has(origin.extension.file)),
        (file) => {
          const ext = byFile.get(file);
          if (!ext) return ['net', 'browser']; // no longer loaded: what it opened goes
          const id = { file, sha256: ext.artifact.sha256 };
          return [...new Set(ext.artifact.manifest.tools.flatMap((t) => narrowedKinds(t.allow, id, prev.policy, next.policy)))];
        },
      );
      if (stopped.length) {
        // Clients see which commands, not whose sessions they ran in (a session's name is its client's own).
        const names = [...new Set(stopped.map((s) => s.slice(s.lastIndexOf(': ') + 2)))];
        host.notice('info', `stopped ${stopped.length} command(s) the new settings no longer grant: ${names.join(', ')}`,
          `stopped ${stopped.length} command(s) the new settings no longer grant: ${stopped.join(', ')}`);
      }
      host.notice('info', `${config.file} changed: the new settings apply from the next call` +
        (needRestart.length ? `; ${needRestart.join(', ')} take effect after a restart` : ''));
      // A principal's listing is its [principals.*] tools' share of all tools: a changed table changes it too.
      if (JSON.stringify(host.allTools()) !== before || JSON.stringify(prev.principals) !== JSON.stringify(next.principals)) toolsChanged();
    });
  };
  const name = basename(config.file);
  let watcher: FSWatcher | undefined;
  try {
    // Through its directory, so that an editor's save-by-rename is seen.
    watcher = watch(dirname(config.file), (_event, changed) => {
      if (changed !== null && String(changed) !== name) return;
      clearTimeout(timer);
      timer = setTimeout(apply, DEBOUNCE_MS);
    });
  } catch (e) {
    host.notice('error', `cannot watch ${config.file}: ${(e as Error).message}; config changes take a restart`);
  }
  return {
    reload: () => {
      clearTimeout(timer);
      apply();
    },
    stop: () => {
      clearTimeout(timer);
      watcher?.close();
    },
  };
}
