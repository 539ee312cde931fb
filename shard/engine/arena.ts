// Lays out the typed arrays of one immutable structure in a single (Shared)ArrayBuffer with a
// small layout table, so a segment can be handed to worker threads (post the buffer + layout,
// views are rebuilt with no copy) and written to disk as one blob that loads without parsing.

export type ArrayKind = 'u8' | 'u16' | 'u32' | 'i32' | 'f32' | 'f64';
export type TypedArray = Uint8Array | Uint16Array | Uint32Array | Int32Array | Float32Array | Float64Array;

export interface ArenaSection {
  name: string;
  kind: ArrayKind;
  /** byte offset in the buffer (8-byte aligned) */
  offset: number;
  /** element count */
  length: number;
}

export interface ArenaLayout {
  byteLength: number;
  sections: ArenaSection[];
}

const CTORS = {
  u8: Uint8Array,
  u16: Uint16Array,
  u32: Uint32Array,
  i32: Int32Array,
  f32: Float32Array,
  f64: Float64Array,
} as const;

function kindOf(a: TypedArray): ArrayKind {
  if (a instanceof Uint8Array) return 'u8';
  if (a instanceof Uint16Array) return 'u16';
  if (a instanceof Uint32Array) return 'u32';
  if (a instanceof Int32Array) return 'i32';
  if (a instanceof Float32Array) return 'f32';
  return 'f64';
}

/** SharedArrayBuffer when the platform allows it (always in Node), else a plain buffer. */
/** `a`'s elements at the start of a new array of the same kind and `length` elements (scratch arrays that grow). */
export function grown<T extends TypedArray>(a: T, length: number): T {
  const b = new (a.constructor as new (n: number) => T)(length);
  b.set(a);
  return b;
}

export function allocateShared(byteLength: number): SharedArrayBuffer | ArrayBuffer {
  return typeof SharedArrayBuffer === 'function' ? new SharedArrayBuffer(byteLength) : new ArrayBuffer(byteLength);
}

export class ArenaBuilder {
  private readonly parts: { name: string; array: TypedArray }[] = [];

  add<T extends TypedArray>(name: string, array: T): this {
    if (this.parts.some((p) => p.name === name)) throw new Error(`arena section ${name} added twice`);
    this.parts.push({ name, array });
    return this;
  }

  /** Copies every array into one fresh shared buffer. */
  build(): Arena {
    const sections: ArenaSection[] = [];
    let at = 0;
    for (const p of this.parts) {
      at = align8(at);
      sections.push({ name: p.name, kind: kindOf(p.array), offset: at, length: p.array.length });
      at += p.array.byteLength;
    }
    const layout: ArenaLayout = { byteLength: align8(at), sections };
    const buffer = allocateShared(layout.byteLength);
    const bytes = new Uint8Array(buffer);
    this.parts.forEach((p, i) => {
      const s = sections[i] as ArenaSection;
      bytes.set(new Uint8Array(p.array.buffer, p.array.byteOffset, p.array.byteLength), s.offset);
    });
    return new Arena(buffer, layout);
  }
}

export class Arena {
  private readonly byName = new Map<string, ArenaSection>();

  constructor(
    readonly buffer: SharedArrayBuffer | ArrayBuffer,
    readonly layout: ArenaLayout,
  ) {
    for (const s of layout.sections) this.byName.set(s.name, s);
    if (buffer.byteLength < layout.byteLength) throw new Error('arena buffer is shorter than its layout');
  }

  /** Loads a serialized arena: the bytes are copied into a fresh shared buffer. */
  static fromBytes(bytes: Uint8Array, layout: ArenaLayout): Arena {
    const buffer = allocateShared(layout.byteLength);
    new Uint8Array(buffer).set(bytes.subarray(0, layout.byteLength));
    return new Arena(buffer, layout);
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  u8(name: string): Uint8Array { return this.view(name, 'u8') as Uint8Array; }
  u16(name: string): Uint16Array { return this.view(name, 'u16') as Uint16Array; }
  u32(name: string): Uint32Array { return this.view(name, 'u32') as Uint32Array; }
  i32(name: string): Int32Array { return this.view(name, 'i32') as Int32Array; }
  f32(name: string): Float32Array { return this.view(name, 'f32') as Float32Array; }
  f64(name: string): Float64Array { return this.view(name, 'f64') as Float64Array; }

  /** Bytes of the sections whose name starts with `prefix`. */
  bytesOf(prefix: string): number {
    let n = 0;
    for (const s of this.layout.sections) if (s.name.startsWith(prefix)) n += s.length * CTORS[s.kind].BYTES_PER_ELEMENT;
    return n;
  }

  private view(name: string, kind: ArrayKind): TypedArray {
    const s = this.byName.get(name);
    if (!s) throw new Error(`arena has no section ${name}`);
    if (s.kind !== kind) throw new Error(`arena section ${name} is ${s.kind}, not ${kind}`);
    // both buffer kinds back typed arrays the same way; the DOM typings only spell out one
    return new CTORS[kind](this.buffer as ArrayBuffer, s.offset, s.length);
  }
}

function align8(n: number): number {
  return Math.ceil(n / 8) * 8;
}
