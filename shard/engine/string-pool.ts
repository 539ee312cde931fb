// The packed string pools of segments: UTF-16 for tables searched by code unit, UTF-8 for
// display text. While building, plain packed JS arrays hold the numbers (V8 keeps them unboxed
// and `push` is monomorphic); they become typed arrays once the size is known.

/** Strings packed as UTF-16 code units with offsets (for tables searched by code unit). */
export class StringPool {
  private readonly offsets: number[] = [0];
  private readonly chars: number[] = [];

  get size(): number {
    return this.offsets.length - 1;
  }

  push(s: string): number {
    for (let i = 0; i < s.length; i++) this.chars.push(s.charCodeAt(i));
    this.offsets.push(this.chars.length);
    return this.offsets.length - 2;
  }

  offsetArray(): Uint32Array {
    return Uint32Array.from(this.offsets);
  }

  charArray(): Uint16Array {
    return Uint16Array.from(this.chars);
  }
}

/** Strings packed as UTF-8 with byte offsets: half the size for display text, which is mostly ASCII. */
export class Utf8Pool {
  private readonly offsets: number[] = [0];
  private readonly chunks: Buffer[] = [];
  private total = 0;

  push(s: string): number {
    const b = Buffer.from(s, 'utf8');
    this.chunks.push(b);
    this.total += b.length;
    this.offsets.push(this.total);
    return this.offsets.length - 2;
  }

  offsetArray(): Uint32Array {
    return Uint32Array.from(this.offsets);
  }

  byteArray(): Uint8Array {
    const out = new Uint8Array(this.total);
    let at = 0;
    for (const c of this.chunks) {
      out.set(c, at);
      at += c.length;
    }
    return out;
  }
}

/** Reads strings out of a UTF-8 pool (the bytes may live in a SharedArrayBuffer). */
export class Utf8Reader {
  private readonly buf: Buffer;

  constructor(
    private readonly offsets: Uint32Array,
    bytes: Uint8Array,
  ) {
    this.buf = Buffer.from(bytes.buffer as ArrayBuffer, bytes.byteOffset, bytes.byteLength);
  }

  get(i: number): string {
    return this.buf.toString('utf8', this.offsets[i] as number, this.offsets[i + 1] as number);
  }
}
