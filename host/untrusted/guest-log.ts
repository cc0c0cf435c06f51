// A guest's log lines as its author reads them: positions in the bundle (`bundle:<name>:line:column`, in the
// stacks of uncaught errors and of logged errors) mapped to the extension's own sources, and kiln's prelude
// frames dropped. The source map loads on the first line that needs it; lines stay in the order logged.
import { hasPreludeFrame, withoutPreludeFrames } from '../engine/prelude-frames.js';
import type { StackMapper } from './source-map.js';
import { BUNDLE_PREFIX } from './source-map.js';

type Emit = (level: string, message: string) => void;

/** `emit`, with each line's stack positions mapped through `mapper` (the artifact's, if it has one). */
export function mappedLog(mapper: () => Promise<StackMapper | undefined>, emit: Emit): Emit {
  let queue: Promise<void> | undefined;
  return (level, message) => {
    const needsMapping = message.includes(BUNDLE_PREFIX) || hasPreludeFrame(message);
    if (!needsMapping && !queue) return emit(level, message);
    const mine = (queue ?? Promise.resolve()).then(async () => {
      let text = withoutPreludeFrames(message);
      if (text.includes(BUNDLE_PREFIX)) {
        const m = await mapper().catch(() => undefined);
        if (m) text = m.rewrite(text);
      }
      emit(level, text);
    });
    queue = mine;
    void mine.finally(() => {
      if (queue === mine) queue = undefined;
    });
  };
}
