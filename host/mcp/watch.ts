// `kiln mcp --watch`: the extension files and directories are watched; a change (debounced) reloads the
// registry — changed sources rebuilt, new files loaded, deleted ones dropped, a broken save keeping the last
// good version (Registry.reload) — then every session's guests are discarded (fresh globals on the next call,
// vars kept) and, when the exposed tools changed, clients are told (notifications/tools/list_changed).
import { existsSync, statSync, watch, type FSWatcher } from 'node:fs';
import { dirname } from 'node:path';
import type { McpHost } from './host.js';

const DEBOUNCE_MS = 200;

/** `current()`: the paths and exclusions in force (a changed config file can change them: config-watch.ts). */
export function watchExtensions(host: McpHost, paths: string[], current: () => { paths: string[]; exclude: string[] }, toolsChanged: () => void): () => void {
  const watchers: FSWatcher[] = [];
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const reload = () => {
    running = running.then(async () => {
      try {
        const { paths: now, exclude } = current();
        const changed = await host.registry.reload(now, exclude);
        host.sessions.releaseGuests('its extensions were reloaded');
        for (const n of host.startupNotices()) host.notice(n.level, n.text);
        host.notice('info', `reloaded: ${host.registry.exposed} tool(s) from ${host.registry.extensions.length} extension(s)`);
        if (changed) toolsChanged();
      } catch (e) {
        host.notice('error', `reload failed, the previous tools keep serving: ${(e as Error)?.message ?? e}`);
      }
    });
  };
  const changed = (_event: string, name: string | Buffer | null) => {
    if (name && /(^|[/\\])(node_modules|\.git)([/\\]|$)/.test(String(name))) return;
    clearTimeout(timer);
    timer = setTimeout(reload, DEBOUNCE_MS);
  };
  for (const p of paths) {
    // A file is watched through its directory, so that an editor's save-by-rename is seen.
    const dir = existsSync(p) && statSync(p).isDirectory() ? p : dirname(p);
    try {
      watchers.push(watch(dir, { recursive: true }, changed));
    } catch (e) {
      host.notice('error', `--watch cannot watch ${dir}: ${(e as Error).message}`);
    }
  }
  return () => {
    clearTimeout(timer);
    for (const w of watchers) w.close();
  };
}
