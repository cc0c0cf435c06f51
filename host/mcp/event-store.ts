// The events an MCP 2025-11-25 HTTP session has streamed (the SDK transport's EventStore), so a client whose
// stream broke can reconnect with `Last-Event-ID` and get what it missed: every event carries an `id:`.
//
// Invariants:
//  - One store per MCP session, dropped with it: a client replays only its own session's events (the session
//    id is checked before the store is asked).
//  - Bounded: at most MAX_EVENTS events and MAX_BYTES of them per session, the oldest dropped first; an id
//    older than what is kept replays what is kept of its stream.
//  - An id of a request's stream this process never streamed (another replica's, which stopped: mcp/http.ts
//    carries such a session on) is refused, so the client learns at once that the request's answer is lost
//    rather than waiting for it; the session's own GET stream resumes, with nothing to replay.
import type { EventStore, JSONRPCMessage } from '@modelcontextprotocol/server';

export const MAX_EVENTS = 1000;
export const MAX_BYTES = 8 * 1024 * 1024;

interface Stored {
  seq: number;
  stream: string;
  message: JSONRPCMessage;
  bytes: number;
}

/** Event ids are `<stream>.<seq>`: the stream they belong to, and their place in the session's order. */
function parse(id: string): { stream: string; seq: number } | undefined {
  const dot = id.lastIndexOf('.');
  const seq = Number(id.slice(dot + 1));
  return dot > 0 && Number.isSafeInteger(seq) ? { stream: id.slice(0, dot), seq } : undefined;
}

/** The SDK transport's name for a session's standalone GET stream. */
const GET_STREAM = '_GET_stream';
/** Stream ids remembered per session (the oldest forgotten first). */
const MAX_STREAMS = 10_000;

export class SessionEvents implements EventStore {
  private readonly events: Stored[] = [];
  private readonly streams = new Set<string>();
  private bytes = 0;
  private next = 1;

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const bytes = JSON.stringify(message).length + streamId.length;
    if (!this.streams.has(streamId)) {
      this.streams.add(streamId);
      if (this.streams.size > MAX_STREAMS) this.streams.delete(this.streams.values().next().value!);
    }
    const e = { seq: this.next++, stream: streamId, message, bytes };
    this.events.push(e);
    this.bytes += bytes;
    while (this.events.length > MAX_EVENTS || (this.bytes > MAX_BYTES && this.events.length > 1)) this.bytes -= this.events.shift()!.bytes;
    return `${streamId}.${e.seq}`;
  }

  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    const stream = parse(eventId)?.stream;
    return stream !== undefined && (this.streams.has(stream) || stream === GET_STREAM) ? stream : undefined;
  }

  async replayEventsAfter(lastEventId: string, { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> }): Promise<string> {
    const at = parse(lastEventId);
    if (!at || (!this.streams.has(at.stream) && at.stream !== GET_STREAM)) throw new Error('not an event id of this session');
    for (const e of this.events.filter((x) => x.stream === at.stream && x.seq > at.seq)) {
      if (Object.keys(e.message).length === 0) continue; // a priming event carries nothing to replay
      await send(`${e.stream}.${e.seq}`, e.message);
    }
    return at.stream;
  }
}
