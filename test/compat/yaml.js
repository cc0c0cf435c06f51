// yaml: parse with anchors, tags and comments; the Document API; stringify.
import YAML from 'yaml';
import { tool } from './_tool.js';

export const args = {};
const SRC = `# service
defaults: &d
  retries: 3
  timeout: 1.5
services:
  - name: web
    <<: *d
    ports: [80, 443]
  - name: "db\\tx"
    <<: *d
    retries: 5
    enabled: yes
    when: 2024-01-02
multi: |
  line one
  line two
folded: >
  a
  b
`;
export function run() {
  const doc = YAML.parseDocument(SRC, { merge: true });
  doc.setIn(['services', 0, 'ports', 2], 8080);
  return {
    parsed: YAML.parse(SRC, { merge: true }),
    yaml11: YAML.parse('a: yes\nb: 0o17\nc: 1_000', { version: '1.1' }),
    comment: doc.commentBefore,
    edited: doc.toString(),
    stringify: YAML.stringify({ a: [1, { b: 'x: y' }], s: 'multi\nline', n: null, e: [] }),
    errors: YAML.parseDocument('a: [1, 2\nb: }').errors.map((e) => e.code),
  };
}
tool('yaml', run);
