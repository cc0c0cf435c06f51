// readable-stream: Node's streams from npm: Readable.from, a Transform, a Writable, pipeline, object mode and backpressure.
import { PassThrough, Readable, Transform, Writable, pipeline } from 'readable-stream';
import { tool } from './_tool.js';

export const args = {};
export async function run() {
  const chunks = [];
  const upper = new Transform({ transform(chunk, _enc, cb) { cb(null, chunk.toString().toUpperCase()); } });
  const sink = new Writable({ highWaterMark: 2, write(chunk, _enc, cb) { chunks.push(chunk.toString()); cb(); } });
  const done = await new Promise((resolve) => pipeline(Readable.from(['ab', 'cd', 'ef']), upper, sink, (err) => resolve(err ? err.message : 'ok')));
  const objects = [];
  for await (const x of Readable.from([1, 2, 3, 4]).map((x) => x * 10).filter((x) => x !== 20)) objects.push(x);
  const pass = new PassThrough();
  const got = [];
  pass.on('data', (d) => got.push(d.toString()));
  const ended = new Promise((resolve) => pass.on('end', resolve));
  const writes = [pass.write('x'), pass.write(new Uint8Array([121]))];
  pass.end('z');
  await ended;
  const failed = await new Promise((resolve) => pipeline(
    new Readable({ read() { this.destroy(new Error('source broke')); } }),
    new PassThrough(),
    (err) => resolve(err ? err.message : 'no error'),
  ));
  return { done, chunks, objects, got, writes, failed, hwm: new Readable().readableHighWaterMark };
}
tool('readable-stream', run);
