// The prelude is the engine's (evaluated in its snapshot under the file name `kiln:prelude`): its frames in a
// guest's stack are kiln's insides, not the author's code. Kept apart from source-map.ts so the engine does
// not load the source-map library to strip them.

/** `text` without the stack frames of kiln's own prelude. */
export function withoutPreludeFrames(text: string): string {
  return text.split('\n').filter((l) => !/^\s+at .*[( ]kiln:prelude[:)]/.test(l)).join('\n');
}
