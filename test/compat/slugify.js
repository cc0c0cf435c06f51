// slugify: slugs from text in several languages with its options, a locale and extended characters.
import slugify from 'slugify';
import { tool } from './_tool.js';

export const args = {};
export function run() {
  slugify.extend({ '☢': 'radioactive' });
  return {
    basic: slugify('Some String: Hello, World!'),
    options: slugify('  Crème Brûlée & Co. — “Best” ☢ ', { lower: true, strict: true, replacement: '_' }),
    remove: slugify('a*b+c~d.e(f)', { remove: /[*+~.()]/g }),
    locale: [slugify('Über Öl', { locale: 'de' }), slugify('Ђорђе Šćepanović', { lower: true })],
    trim: slugify(' -- x -- ', { trim: false }),
    symbols: slugify('I ♥ € 100% $5 < 6', { lower: true }),
    extended: slugify('☢ zone'),
  };
}
tool('slugify', run);
