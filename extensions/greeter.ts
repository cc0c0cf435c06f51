// One file, two hosts: an MCP tool (kiln mcp) and the BDD steps that describe it (kiln bdd). The file branches
// on kiln.host, so each host gets only what it consumes; the logic both use is one function.
const GREETINGS: Record<string, string> = { en: 'Hello', fr: 'Bonjour', de: 'Hallo', es: 'Hola' };

function greet(name: string, lang: string): string {
  const word = GREETINGS[lang];
  if (!word) throw new RangeError(`no greeting for language "${lang}" (${Object.keys(GREETINGS).join(', ')})`);
  return `${word}, ${name}!`;
}

if (kiln.host !== 'bdd') {
  defineTool({
    name: 'greeter.greet',
    description: 'Greet someone in one of a few languages',
    inputSchema: {
      type: 'object',
      properties: { name: { type: 'string', minLength: 1, maxLength: 100 }, lang: { type: 'string', enum: Object.keys(GREETINGS) } },
      required: ['name', 'lang'],
      additionalProperties: false,
    },
    exposeAsTool: true,
    handler: ({ args }: { args: { name: string; lang: string } }) => greet(args.name, args.lang),
  });
}

if (kiln.host === 'bdd') {
  When('I greet {string} in {word}', function (name: string, lang: string) {
    try {
      this.greeting = greet(name, lang);
    } catch (e) {
      this.error = (e as Error).message;
    }
  });
  Then('I hear {string}', function (expected: string) {
    if (this.greeting !== expected) throw new Error(`expected ${JSON.stringify(expected)}, heard ${JSON.stringify(this.greeting)}`);
  });
  Then('I am told {string}', function (expected: string) {
    if (!String(this.error).includes(expected)) throw new Error(`expected an error with ${JSON.stringify(expected)}, got ${JSON.stringify(this.error)}`);
  });
}
