// The browser bench's extension (bench/run.mjs): open a page on the bench's local site, click a button.
defineTool({ name: 'bb.open', exposeAsTool: true, timeoutMs: 60_000, allow: { browser: ['127.0.0.1'] },
  handler: async ({ page, args }: any) => { await page.goto(args.url); return page.title(); } });
defineTool({ name: 'bb.click', exposeAsTool: true, allow: { browser: ['127.0.0.1'] },
  handler: async ({ page }: any) => { await page.click('#b'); return page.textContent('#n'); } });
