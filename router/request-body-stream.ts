// The body of a streaming route (multipart uploads, presigned PUTs) as a Node Readable fed by
// uWS `onData`. Flow control: while the consumer is behind, the socket is paused (`res.pause`)
// and resumed when it reads again, so a large upload never piles up in memory. When the answer
// must go out before the body was read (a refusal, an error), the rest is read and dropped up to
// DRAIN_LIMIT first, because a client that is still sending when the connection closes may
// never read the answer.
import { Readable } from 'node:stream';
import type { HttpResponse } from 'uWebSockets.js';

/** Most bytes read and dropped after an early answer before the connection is closed instead. */
export const DRAIN_LIMIT = 64 * 1024 * 1024;

export class RequestBodyStream extends Readable {
  /** bytes received from the client so far */
  received = 0;
  /** the last byte of the body has arrived */
  complete = false;
  private socketPaused = false;
  /** the response is over: the uWS handle may no longer be touched */
  private detached = false;
  private afterDrain: ((complete: boolean) => void) | null = null;
  private dropped = 0;

  constructor(
    private readonly res: HttpResponse,
    highWaterMark = 1024 * 1024,
  ) {
    super({ highWaterMark });
    res.onData((chunk, isLast) => this.onChunk(chunk, isLast));
  }

  override _read(): void {
    if (this.socketPaused && !this.detached) {
      this.socketPaused = false;
      this.res.resume();
    }
  }

  /**
   * Stops handing the body to consumers, reads and drops the rest, then calls `then` with
   * whether the whole body arrived (false: more than DRAIN_LIMIT was left; close the connection).
   */
  drain(then: (complete: boolean) => void): void {
    if (this.complete) {
      then(true);
      return;
    }
    this.afterDrain = then;
    if (!this.destroyed) this.destroy();
    if (this.socketPaused && !this.detached) {
      this.socketPaused = false;
      this.res.resume();
    }
  }

  /** The client went away: a consumer sees an error, and the socket is never touched again. */
  abort(err: Error): void {
    this.detached = true;
    const then = this.afterDrain;
    this.afterDrain = null;
    if (!this.destroyed) this.destroy(err);
    then?.(false);
  }

  /** The response has ended; the uWS handle is no longer valid. */
  detach(): void {
    this.detached = true;
  }

  private onChunk(chunk: ArrayBuffer, isLast: boolean): void {
    if (this.detached) return;
    const n = chunk.byteLength;
    this.received += n;
    if (isLast) this.complete = true;
    if (this.afterDrain) {
      this.dropped += n;
      if (isLast || this.dropped > DRAIN_LIMIT) {
        const then = this.afterDrain;
        this.afterDrain = null;
        then(isLast);
      }
      return;
    }
    if (this.destroyed) return;
    // uWS neuters the chunk when this callback returns: copy it now
    if (n > 0 && !this.push(Buffer.from(chunk.slice(0))) && !isLast && !this.socketPaused) {
      this.socketPaused = true;
      this.res.pause();
    }
    if (isLast) this.push(null);
  }
}
