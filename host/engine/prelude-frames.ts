// The prelude is the engine's: its frames in a guest's stack are kiln's insides, not the author's code. The
// engine keeps the prelude's bytecode without debug information (smaller snapshot, less memory per guest), so
// its frames carry no file name and QuickJS prints them as `(<null>:0:1)`; every other frame names its file
// (an extension's `bundle:`, a script's name, `<input>` for eval). Kept apart from untrusted/source-map.ts so the engine
// does not load the source-map library to strip them.

const PRELUDE_FRAME = /^\s+at .*\(<null>(:\d+:\d+)?\)$/;

/** Whether `text` holds a frame of kiln's prelude. */
export const hasPreludeFrame = (text: string): boolean => text.includes('(<null>');

/** `text` without the stack frames of kiln's own prelude. */
export function withoutPreludeFrames(text: string): string {
  return text.split('\n').filter((l) => !PRELUDE_FRAME.test(l)).join('\n');
}
