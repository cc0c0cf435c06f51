// html: @cucumber/html-formatter's CucumberHtmlStream, as cucumber-js 13 uses it: a self-contained page (the
// package's stylesheet and script inlined) with every envelope embedded. A Transform of envelopes into text.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { finished } from 'node:stream/promises';
import { CucumberHtmlStream } from '@cucumber/html-formatter';
import type { Formatter } from './formatter.js';

function htmlAssets(): { css: string; js: string; icon: string } {
  // The package's entry is dist/src/index.js; the stylesheet and script it inlines are the bundles in dist/.
  const src = dirname(createRequire(import.meta.url).resolve('@cucumber/html-formatter'));
  return { css: join(src, '..', 'main.css'), js: join(src, '..', 'main.js'), icon: join(src, 'icon.url') };
}

export function htmlFormatter(write: (text: string) => void): Formatter {
  const { css, js, icon } = htmlAssets();
  const stream = new CucumberHtmlStream(css, js, icon);
  let failure: Error | undefined;
  stream.on('data', (chunk: string | Buffer) => write(String(chunk)));
  stream.on('error', (error: Error) => { failure ??= error; });
  return {
    update(envelope) {
      if (!stream.writableEnded) stream.write(envelope);
    },
    async finish() {
      if (!stream.writableEnded) stream.end();
      await finished(stream).catch((error: Error) => { failure ??= error; });
      if (failure) throw failure;
    },
  };
}
