// Schemas written once: a zod schema is the tool's inputSchema and outputSchema, its type is `args`' type and
// the result's, and the build writes its JSON Schema for tools/list (docs/extensions.md, "Typed schemas").
// The host checks each call against that JSON Schema; zod's own validate then runs here, so `.trim()` and the
// refinement apply to what the handler gets.
import { z } from 'zod';

const Input = z.object({
  text: z.string().min(1).max(200).trim().describe('what to count'),
  unit: z.enum(['words', 'chars']).default('words'),
}).refine((a) => a.text.length > 0, { message: 'text is only whitespace', path: ['text'] });

const Output = z.object({ unit: z.enum(['words', 'chars']), count: z.number().int() });

defineTool({
  name: 'typed.count',
  description: 'Count the words or characters of a text',
  inputSchema: Input,
  outputSchema: Output,
  exposeAsTool: true,
  handler: ({ args }) => ({
    unit: args.unit,
    count: args.unit === 'words' ? args.text.split(/\s+/).length : args.text.length,
  }),
});
