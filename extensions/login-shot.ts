// Logs in to a web page in the session's headless browser and returns what it says, with a screenshot.
// allow.browser lists the only hosts its pages may load: a navigation, a redirect, a frame, an image or the
// page's own fetch to any other host is refused before it leaves the browser.
defineTool({
  name: 'site.login',
  title: 'Log in and take a screenshot',
  description: 'Open a login page on this machine, sign in as `user`, and return the greeting and a screenshot',
  inputSchema: {
    type: 'object',
    properties: {
      url: { type: 'string', description: 'the login page, e.g. http://127.0.0.1:8080/login' },
      user: { type: 'string' },
    },
    required: ['url', 'user'],
    additionalProperties: false,
  },
  exposeAsTool: true,
  timeoutMs: 30_000,
  allow: { browser: ['127.0.0.1'] },
  handler: async ({ args, page }: { args: { url: string; user: string }; page: any }) => {
    await page.goto(args.url);
    await page.getByLabel('User').fill(args.user);
    await page.getByLabel('Password').fill('not-a-real-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    const greeting = await page.textContent('#greeting');
    // Text and an image together: kiln.content turns them into MCP content parts.
    return kiln.content([`${greeting} (${await page.title()})`, await page.screenshot()]);
  },
});
