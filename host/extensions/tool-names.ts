// The names MCP clients see for the tools kiln serves. A manifest's name (`extensions/manifest.ts` TOOL_NAME:
// letters, digits, `_`, `-` and `.`, at most 64) is a valid MCP tool name, but the function-calling APIs of
// models accept only `^[a-zA-Z0-9_-]{1,64}$`, and some clients drop or rename a tool whose name has a dot.
// `[mcp] toolNames = "portable"` advertises each name with its dots as underscores. Pure.
//
// Invariants:
//  - "declared" advertises every name as it is; "portable" advertises `portableName(name)`, which always
//    matches PORTABLE_NAME.
//  - The mapping is reversible: an advertised name stands for exactly one tool. Names that map to one
//    advertised name (`notes.save` and `notes_save`) are served under it by none of them, whatever the load
//    order (`collisions`): the registry reports them, and plugins[...] still calls each by its own name.

export type ToolNaming = 'declared' | 'portable';
export const TOOL_NAMINGS: readonly ToolNaming[] = ['declared', 'portable'];

/** What a model's function-calling API accepts as a tool name. */
export const PORTABLE_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** `name` (a manifest's tool name) as "portable" advertises it. */
export function portableName(name: string): string {
  return name.replaceAll('.', '_');
}

/** How the tools `names` are advertised under `naming`: each advertised name with the tool it stands for, and
 *  the advertised names more than one tool would take (none of those is advertised). */
export function advertisedNames(names: Iterable<string>, naming: ToolNaming): { toTool: Map<string, string>; collisions: Map<string, string[]> } {
  const claims = new Map<string, string[]>();
  for (const name of names) {
    const shown = naming === 'portable' ? portableName(name) : name;
    const list = claims.get(shown);
    if (list) list.push(name);
    else claims.set(shown, [name]);
  }
  const toTool = new Map<string, string>();
  const collisions = new Map<string, string[]>();
  for (const [shown, list] of claims) {
    if (list.length === 1) toTool.set(shown, list[0]);
    else collisions.set(shown, list.sort());
  }
  return { toTool, collisions };
}
