// Server-sent events over a streamed uWS response: `text/event-stream`, an id on every event,
// a comment line as heartbeat while nothing happens (so proxies keep the connection and a dead
// client is noticed), and a bounded queue: a client that stops reading is cut off instead of
// growing memory. `MetaHub` fans the router's single coordinator watch out to the open streams,
// numbering events so a reconnecting client (`Last-Event-ID`) gets what it missed when it is
// still in the recent window, and a fresh snapshot otherwise.
import type { MetaEvent } from '../coordinator/coordinator.js';
import { StreamReply, type ResponseSink } from './route.js';

export interface SseEvent {
  id?: string;
  event: string;
  data: unknown;
}

/** Events queued for one slow client before its stream is closed. */
const MAX_QUEUED = 1_000;
/** How long a disconnected client should wait before reconnecting (the `retry:` field). */
const RETRY_MS = 2_000;

export class SseWriter {
  private queue: string[] = [];
  private pumping = false;
  private ended = false;
  private resolveClosed!: () => void;
  /** resolves when the client went away or `end` was called */
  readonly closed = new Promise<void>((resolve) => (this.resolveClosed = resolve));
  private readonly cleanups: (() => void)[] = [];

  constructor(private readonly sink: ResponseSink) {
    sink.onAbort(() => this.finish());
  }

  get isClosed(): boolean {
    return this.ended;
  }

  send(e: SseEvent): void {
    let text = '';
    if (e.id !== undefined) text += `id: ${e.id}\n`;
    text += `event: ${e.event}\ndata: ${JSON.stringify(e.data)}\n\n`;
    this.enqueue(text);
  }

  comment(text: string): void {
    this.enqueue(`: ${text}\n\n`);
  }

  /** Runs `fn` when the stream closes (unsubscribe, timers). */
  onClose(fn: () => void): void {
    if (this.ended) fn();
    else this.cleanups.push(fn);
  }

  /** Ends the stream once what is queued has been written. */
  end(): void {
    if (this.ended) return;
    this.enqueue(null);
  }

  private enqueue(text: string | null): void {
    if (this.ended) return;
    if (text === null) {
      if (!this.pumping) this.finish();
      else this.queue.push('\0end');
      return;
    }
    if (this.queue.length >= MAX_QUEUED) {
      this.finish();
      return;
    }
    this.queue.push(text);
    if (!this.pumping) void this.pump();
  }

  private async pump(): Promise<void> {
    this.pumping = true;
    try {
      while (this.queue.length > 0 && !this.ended) {
        const batch = this.queue.splice(0);
        const endAt = batch.indexOf('\0end');
        const text = (endAt >= 0 ? batch.slice(0, endAt) : batch).join('');
        if (text.length > 0) await this.sink.write(text);
        if (endAt >= 0 || this.sink.aborted) {
          this.finish();
          return;
        }
      }
    } finally {
      this.pumping = false;
    }
  }

  private finish(): void {
    if (this.ended) return;
    this.ended = true;
    this.queue = [];
    for (const c of this.cleanups.splice(0)) {
      try {
        c();
      } catch {
        // a cleanup must not keep the others from running
      }
    }
    this.resolveClosed();
  }
}

/**
 * A streamed SSE response. `setup` subscribes and sends the first events; the response lasts
 * until the client leaves or the writer is ended. Heartbeats every `heartbeatMs`.
 */
export function sseReply(heartbeatMs: number, setup: (w: SseWriter) => Promise<void> | void, onHeartbeat?: (w: SseWriter) => void): StreamReply {
  return new StreamReply(
    'text/event-stream; charset=utf-8',
    async (sink) => {
      const w = new SseWriter(sink);
      await sink.write(`retry: ${RETRY_MS}\n\n`);
      const timer = setInterval(() => {
        w.comment('heartbeat');
        onHeartbeat?.(w);
      }, heartbeatMs);
      w.onClose(() => clearInterval(timer));
      try {
        await setup(w);
      } catch (err) {
        w.end();
        throw err;
      }
      await w.closed;
    },
    { 'cache-control': 'no-cache', 'x-accel-buffering': 'no' },
  );
}

export interface NumberedEvent {
  seq: number;
  event: MetaEvent;
}

/** Index and job events of every tenant, numbered, with a window of recent ones for resumes. */
export class MetaHub {
  /** distinguishes this router's numbering from any other's (and from its own before a restart) */
  readonly epoch = Date.now().toString(36);
  private seq = 0;
  private readonly ring: NumberedEvent[] = [];
  private readonly listeners = new Set<(e: NumberedEvent) => void>();

  constructor(private readonly windowSize = 2_048) {}

  publish(event: MetaEvent): void {
    if (event.type !== 'index' && event.type !== 'job') return;
    const numbered = { seq: ++this.seq, event };
    this.ring.push(numbered);
    if (this.ring.length > this.windowSize) this.ring.splice(0, this.ring.length - this.windowSize);
    for (const l of this.listeners) l(numbered);
  }

  subscribe(listener: (e: NumberedEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  idOf(seq: number): string {
    return `${this.epoch}.${seq}`;
  }

  /** The current position: events after it are new. */
  get position(): number {
    return this.seq;
  }

  /**
   * Events after `lastEventId` when it is one of ours and still in the window; null when the
   * client must start from a snapshot instead.
   */
  since(lastEventId: string | undefined): NumberedEvent[] | null {
    if (!lastEventId) return null;
    const m = /^([0-9a-z]+)\.(\d+)$/.exec(lastEventId);
    if (!m || m[1] !== this.epoch) return null;
    const after = Number(m[2]);
    if (after > this.seq) return null;
    const oldest = this.ring[0]?.seq ?? this.seq + 1;
    if (after < oldest - 1) return null;
    return this.ring.filter((e) => e.seq > after);
  }

  get subscribers(): number {
    return this.listeners.size;
  }
}
