// Build-time helpers. Plain packed JS arrays are used for numeric lists while building (V8 keeps
// them unboxed and `push` is monomorphic); they become typed arrays once the size is known.

/** Strings packed as UTF-16 code units with offsets (the layout every string table here uses). */
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
