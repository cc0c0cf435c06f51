// TextDecoderStream and TextEncoderStream: the encoders of encoding.js as TransformStreams.
import { $ } from './internal.js';
import { TextDecoder, utf8Encode } from './encoding.js';
import { TransformStream } from './streams.js';

class TextDecoderStream extends TransformStream {
  constructor(label = 'utf-8', options = {}) {
    const decoder = new TextDecoder(label, options);
    super({
      transform(chunk, c) { const s = decoder.decode(chunk, { stream: true }); if (s) c.enqueue(s); },
      flush(c) { const s = decoder.decode(); if (s) c.enqueue(s); },
    });
    this[$].decoder = decoder;
  }
  get encoding() { return this[$].decoder.encoding; }
  get fatal() { return this[$].decoder.fatal; }
  get ignoreBOM() { return this[$].decoder.ignoreBOM; }
}

class TextEncoderStream extends TransformStream {
  constructor() {
    let pendingHigh = '';
    super({
      transform(chunk, c) {
        let s = pendingHigh + String(chunk);
        pendingHigh = '';
        const last = s.charCodeAt(s.length - 1);
        if (last >= 0xd800 && last <= 0xdbff) { pendingHigh = s.slice(-1); s = s.slice(0, -1); }
        if (s) c.enqueue(utf8Encode(s));
      },
      flush(c) { if (pendingHigh) c.enqueue(utf8Encode(pendingHigh)); },
    });
  }
  get encoding() { return 'utf-8'; }
}

export { TextDecoderStream, TextEncoderStream };
