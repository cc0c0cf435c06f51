// The transform workload's input: about 100 KiB of JSON text, the same bytes on every run and every peer.
// `{ "items": [{ "id", "name", "qty", "price" }, ...] }`, items added until the text reaches `targetBytes`.

/** @param {number} [targetBytes] @returns {string} */
export function makeTransformInput(targetBytes = 100 * 1024) {
  let s = 42;
  const next = () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0);
  const words = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel', 'india', 'juliet'];
  const parts = [];
  let size = '{"items":[]}'.length;
  for (let id = 0; size < targetBytes; id++) {
    const item = JSON.stringify({
      id,
      name: `${words[next() % words.length]}-${words[next() % words.length]}-${id}`,
      qty: 1 + (next() % 20),
      price: (next() % 100000) / 100,
    });
    parts.push(item);
    size += item.length + (id > 0 ? 1 : 0);
  }
  return `{"items":[${parts.join(',')}]}`;
}

/** The noop workload's argument. */
export const NOOP_ARGS = '{"who":"x"}';
